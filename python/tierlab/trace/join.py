"""A live trace is measured in two places: the load generator sees each request from
the client, the middleware times its phases on the server. They are joined by the
request id the load generator sends (`X-Tierlab-Request`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .schema import DEMANDS, PHASES

COUNTS = ["db_requests", "db_queries"]


def join_server_records(client: pd.DataFrame, server: pd.DataFrame, tier: str) -> pd.DataFrame:
    """Add `<tier>.*` phase and demand columns to the client's records (docs/trace.md);
    requests the server never saw (a failed connection) get visits 0 and zeros. A
    cluster's records carry a `server` column (the server that recorded them)."""
    cols = ["time", *PHASES, *COUNTS, *DEMANDS]
    if server.empty:
        server = pd.DataFrame(columns=["id", *cols])
    if "server" not in server:
        server = server.assign(server=0)
    s = server[server.id > 0].drop_duplicates("id").set_index("id")[[*cols, "server"]]
    joined = s.reindex(client["id"].to_numpy())
    seen = joined["time"].notna().to_numpy()
    out = client.copy()
    out[f"{tier}.server"] = np.where(seen, joined["server"].fillna(-1).to_numpy(), -1).astype(np.int32)
    out[f"{tier}.visits"] = seen.astype(np.uint32)
    for c in cols:
        v = joined[c].fillna(0).to_numpy()
        out[f"{tier}.{c}"] = v.astype(np.uint32) if c in COUNTS else v.astype(float)
    return out
