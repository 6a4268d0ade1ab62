"""The proxies' side of a live cluster trace: their decision logs (one JSON line per
request, crates/proxy/README.md) and their `DispatchSummary` counts, over one run."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from ..trace.schema import DispatchSummary

COUNTS = ["session_migrations", "sessions_created", "queued", "rejected_queue_full", "rejected_queue_timeout", "sync_messages"]


def read_decisions(path: str | Path, offset: int = 0) -> pd.DataFrame:
    """The decision lines written after byte `offset` (a line still being written at
    the end is left for later)."""
    with open(path, "rb") as f:
        f.seek(offset)
        text = f.read()
    whole = text[: text.rfind(b"\n") + 1]
    if not whole:
        return pd.DataFrame(columns=["t", "request", "session", "type", "server", "home", "migrated", "queued", "redispatched", "status", "outcome", "rt"])
    return pd.read_json(io.StringIO(whole.decode()), lines=True, dtype={"request": "Int64", "server": "Int64", "home": "Int64"})


def dispatch_over_run(before: list[dict], after: list[dict]) -> DispatchSummary:
    """The tier's dispatch summary over a run from each proxy's `/summary` before and
    after it: counts summed over the proxies, `sync_payload_bytes` the mean bytes per
    message over all of them (as the simulator reports several dispatchers)."""
    d0, d1 = [s["dispatch"] for s in before], [s["dispatch"] for s in after]
    out = {k: sum(b[k] - a[k] for a, b in zip(d0, d1)) for k in COUNTS}
    sent = sum(b["sync_payload_bytes"] * b["sync_messages"] - a["sync_payload_bytes"] * a["sync_messages"] for a, b in zip(d0, d1))
    return {"dispatchers": len(after), **out, "sync_payload_bytes": sent / out["sync_messages"] if out["sync_messages"] else 0.0}  # type: ignore[typeddict-item]
