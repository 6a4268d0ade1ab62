"""The decision logs beside a live run. The proxies' side of a live cluster trace: their
decision logs (one JSON line per request, crates/proxy/README.md) and their
`DispatchSummary` counts, over one run. And `tierlab control`'s: its log (a header line,
then one decision a line, docs/control.md), registered in the testbed's folder, whose
decisions during a run join that run's trace as a simulated run's controller's do
(`control_during`).

`sessions_created` and `session_migrations` mean what the simulator's do (docs/trace.md):
of the requests measured (sent after the warm-up) that the proxy placed on a server,
those whose session had no home there yet, and those placed away from it. The proxies'
own counters take the whole run, warm-up included, so these two are counted from the
decision lines of the measured requests (the trace's records, by id) instead."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import TypeAdapter

from ..errors import InputError
from ..trace.schema import ControlDecision, ControlSummary, DispatchSummary
from .observed import Period

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


# In a testbed's folder: the logs of the `tierlab control` runs beside it, a path a line.
CONTROL_LOGS = "control-logs"
_CONTROL = TypeAdapter(ControlSummary)


def register_control_log(workdir: str | Path, log: Path) -> None:
    """Name `log` in the testbed's list, for the runs it will see (`control_during`)."""
    with (Path(workdir) / CONTROL_LOGS).open("a") as f:
        f.write(f"{log.resolve()}\n")


def read_control_log(path: str | Path) -> tuple[ControlSummary, float | None]:
    """A control log as the trace's `summary.control`, and its `clock`: the machine's
    monotonic clock (CLOCK_MONOTONIC, one for every process) when its decisions' `t`
    count from; None in a log that does not say (written before it did). A line still
    being written at the end is left out."""
    text = Path(path).read_text()
    lines = text[: text.rfind("\n") + 1].splitlines()
    if not lines:
        raise InputError(f"{path}: an empty control log")
    head = json.loads(lines[0])
    clock = head.pop("clock", None)
    return _CONTROL.validate_python(head | {"decisions": [json.loads(line) for line in lines[1:]]}), clock


def control_during(
    workdir: str | Path, origin: float, period: Period, tier: str, initial: dict[str, int]
) -> tuple[ControlSummary | None, list[pd.DataFrame], dict[str, str]]:
    """The decisions of the controller logged beside a run (its log registered in
    `workdir`) that fall within the run — `origin` its start on the monotonic clock,
    `period` its windows — as the simulator gives them: `summary.control` of `tier`, its
    decisions' `t` from the run's start, and the `control` series (server 0, a frame
    per pool: the size in force in each window, the last decision at or before its
    start or else `initial`, the sizes at the run's start). With none: None and no
    frames. A second log with decisions in the run (two controllers on one testbed) is not
    merged: the third value names it, as `summary.missing` does."""
    listed = Path(workdir) / CONTROL_LOGS
    paths = list(dict.fromkeys(listed.read_text().splitlines())) if listed.exists() else []
    found: list[tuple[Path, ControlSummary, list[ControlDecision], list[ControlDecision]]] = []
    for path in map(Path, paths):
        if not path.exists() or b"\n" not in path.read_bytes():
            continue  # removed since, or its controller stopped before its first line
        logged, clock = read_control_log(path)
        if clock is None:
            continue
        shifted: list[ControlDecision] = [d | {"t": round(clock + d["t"] - origin, 3)} for d in logged["decisions"]]
        inside = [d for d in shifted if 0 < d["t"] <= period.elapsed]
        if inside:
            found.append((path, logged, inside, [d for d in shifted if d["t"] <= 0]))
    if not found:
        return None, [], {}
    (path, logged, inside, before), *others = sorted(found, key=lambda f: f[2][0]["t"])
    missing = (
        {"control": f"the decisions of {', '.join(str(o[0]) for o in others)} (another controller during the run) are not merged; those of {path} are"}
        if others
        else {}
    )
    starts = period.starts()
    frames = []
    for pool in sorted({p for d in inside for p in d["sizes"]}):
        times = np.array([d["t"] for d in before + inside])
        sizes = np.array([d["sizes"].get(pool, initial.get(pool, np.nan)) for d in before + inside], dtype=float)
        # The last decision at or before each window's start; before any, the size then.
        k = np.searchsorted(times, starts, side="right") - 1
        value = np.where(k >= 0, sizes[np.maximum(k, 0)], float(initial.get(pool, np.nan)))
        frames.append(pd.DataFrame({"t": starts, "tier": tier, "server": np.int32(0), "resource": "control", "metric": pool, "value": value}))
    summary: ControlSummary = {"strategy": logged["strategy"], "tier": tier, "interval": logged["interval"], "decisions": inside}
    return summary, frames, missing
