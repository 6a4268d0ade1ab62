"""The proxies' side of a live cluster trace: their decision logs (one JSON line per
request, crates/proxy/README.md) and their `DispatchSummary` counts, over one run.

`sessions_created` and `session_migrations` mean what the simulator's do (docs/trace.md):
of the requests measured (sent after the warm-up) that the proxy placed on a server,
those whose session had no home there yet, and those placed away from it. The proxies'
own counters take the whole run, warm-up included, so these two are counted from the
decision lines of the measured requests (the trace's records, by id) instead."""

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


def dispatch_over_run(before: list[dict], after: list[dict], decisions: pd.DataFrame | None = None, measured=None) -> DispatchSummary:
    """The tier's dispatch summary over a run from each proxy's `/summary` before and
    after it: counts summed over the proxies, `sync_payload_bytes` the mean bytes per
    message over all of them (as the simulator reports several dispatchers). With the
    run's `decisions` and the ids of its `measured` requests, `sessions_created` and
    `session_migrations` are those of the measured requests (as simulated); without
    (a run without records), the proxies' counts over the whole run."""
    d0, d1 = [s["dispatch"] for s in before], [s["dispatch"] for s in after]
    out = {k: sum(b[k] - a[k] for a, b in zip(d0, d1)) for k in COUNTS}
    if decisions is not None and measured is not None:
        out |= session_counts(decisions, measured)
    sent = sum(b["sync_payload_bytes"] * b["sync_messages"] - a["sync_payload_bytes"] * a["sync_messages"] for a, b in zip(d0, d1))
    return {"dispatchers": len(after), **out, "sync_payload_bytes": sent / out["sync_messages"] if out["sync_messages"] else 0.0}  # type: ignore[typeddict-item]


def session_counts(decisions: pd.DataFrame, measured) -> dict[str, int]:
    """`sessions_created` and `session_migrations` of the requests whose ids are in
    `measured`: of their decision lines with a server (the request reached it, as the
    proxy counts), those without a home, and those marked migrated."""
    placed = decisions[decisions["request"].isin(list(measured)) & decisions["server"].notna()].drop_duplicates("request")
    return {"sessions_created": int(placed["home"].isna().sum()), "session_migrations": int(placed["migrated"].astype(bool).sum())}
