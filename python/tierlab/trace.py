"""The trace schema (docs/trace.md), written the same way by the simulator and the
live tools: `requests.parquet`, `timeseries.parquet`, `summary.json` in one folder."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ._core import PHASES
from .errors import TraceError

SCHEMA_VERSION = 2
# The per-tier phase columns `<tier>.<phase>` of requests.parquet, in schema order.
PHASES: list[str] = list(PHASES)
REQUEST_COLUMNS = ["id", "session", "type", "status", "start", "end", "response_time", "retransmissions"]
TIMESERIES_COLUMNS = ["t", "tier", "server", "resource", "metric", "value"]


@dataclass
class Trace:
    """One run, simulated or live. `requests` is None when records were off."""

    summary: dict
    timeseries: pd.DataFrame
    requests: pd.DataFrame | None = None

    @property
    def interrupted(self) -> bool:
        """True if Ctrl-C stopped the run: the files cover the time until then."""
        return bool(self.summary.get("interrupted", False))

    def write(self, folder: str | Path) -> Path:
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        if self.requests is not None:
            self.requests.to_parquet(out / "requests.parquet", index=False)
        self.timeseries.to_parquet(out / "timeseries.parquet", index=False)
        (out / "summary.json").write_text(json.dumps(self.summary, indent=2, sort_keys=True, allow_nan=False) + "\n")
        return out

    def series(self, tier: str, metric: str, resource: str = "", server: int | None = None) -> pd.DataFrame:
        """One metric as a frame indexed by window start, one column per server."""
        ts = self.timeseries
        sel = ts[(ts.tier == tier) & (ts.metric == metric) & (ts.resource == resource)]
        if server is not None:
            sel = sel[sel.server == server]
        return sel.pivot(index="t", columns="server", values="value")


def window_of(t, every: float):
    """Start of the `every`-second window holding time `t` (array or scalar). The small
    offset keeps a window start such as 0.3 (summed up as 0.1 + 0.1 + 0.1, a hair
    under) from rounding down into the window before."""
    return np.floor(np.asarray(t) / every + 1e-6) * every


def read_trace(folder: str | Path) -> Trace:
    folder = Path(folder)
    if not folder.is_dir():
        raise TraceError(f"trace folder not found: {folder}")
    missing = [f for f in ("summary.json", "timeseries.parquet") if not (folder / f).is_file()]
    if missing:
        raise TraceError(f"{folder} is not a complete trace: missing {', '.join(missing)} (write one with `tierlab simulate MODEL --out {folder}`)")
    summary = json.loads((folder / "summary.json").read_text())
    ts = pd.read_parquet(folder / "timeseries.parquet")
    _require(ts, TIMESERIES_COLUMNS, folder / "timeseries.parquet")
    req = None
    if (folder / "requests.parquet").is_file():
        req = pd.read_parquet(folder / "requests.parquet")
        _require(req, REQUEST_COLUMNS, folder / "requests.parquet")
    return Trace(summary, ts, req)


def _require(df: pd.DataFrame, cols: list[str], where: Path) -> None:
    lacking = [c for c in cols if c not in df.columns]
    if lacking:
        raise TraceError(f"{where}: missing columns {', '.join(lacking)} (trace schema v{SCHEMA_VERSION}, see docs/trace.md)")


def timeseries_frame(window_start: np.ndarray, values: np.ndarray, tier: list, server: list, resource: list, metric: list) -> pd.DataFrame:
    """Long format from a windows × series matrix plus per-series labels."""
    w, s = values.shape
    def cat(labels: list) -> pd.Categorical:
        cats = list(dict.fromkeys(labels))
        codes = np.array([cats.index(x) for x in labels], dtype=np.int32)
        return pd.Categorical.from_codes(np.tile(codes, w), cats)

    return pd.DataFrame({
        "t": np.repeat(window_start, s),
        "tier": cat(tier),
        "server": np.tile(np.asarray(server, dtype=np.int32), w),
        "resource": cat(resource),
        "metric": cat(metric),
        "value": values.ravel(),
    })


def from_core(out: dict, model: str, window: float, source: str) -> Trace:
    """The trace of a run of the Rust core (`_core.simulate` or `_core.load`)."""
    summary = json.loads(out["summary"])
    summary.update(model=model, window=window, schema_version=SCHEMA_VERSION, source=source)
    s = out["series"]
    ts = timeseries_frame(s["window_start"], s["values"], s["tier"], s["server"], s["resource"], s["metric"])
    requests = None
    if out["records"] is not None:
        r = dict(out["records"])
        front = {
            "id": r.pop("id"),
            "session": r.pop("session"),
            "type": pd.Categorical.from_codes(r.pop("type").astype(np.int32), out["type_names"]),
            "status": pd.Categorical.from_codes(r.pop("status").astype(np.int8), out["status_names"]),
            "start": r.pop("start"),
            "end": r.pop("end"),
        }
        front["response_time"] = front["end"] - front["start"]
        front["retransmissions"] = r.pop("retransmissions")
        requests = pd.DataFrame({**front, **r})
    return Trace(summary, ts, requests)
