"""The trace: what one run — simulated or live — measured, in one schema
(docs/trace.md): `requests.parquet`, `timeseries.parquet` and `summary.json` in one
folder. `read_trace` validates a folder against the schema."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import TraceError
from .schema import PHASES, REQUEST_COLUMNS, SCHEMA_VERSION, TIMESERIES_COLUMNS, Summary, check_summary

__all__ = ["PHASES", "SCHEMA_VERSION", "Summary", "Trace", "read_trace", "window_of"]


@dataclass
class Trace:
    """One run, simulated or live. `requests` is None when records were off."""

    summary: Summary
    timeseries: pd.DataFrame
    requests: pd.DataFrame | None = None

    @property
    def end(self) -> float:
        """When the measured period ended (seconds from the start of the run)."""
        return self.summary["warmup"] + self.summary["measured_seconds"]

    @property
    def interrupted(self) -> bool:
        """True if Ctrl-C stopped the run: the files cover the time until then."""
        return bool(self.summary["interrupted"])

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


def window_of(t: Any, every: float) -> Any:
    """Start of the `every`-second window holding time `t` (array or scalar). The small
    offset keeps a window start such as 0.3 (summed up as 0.1 + 0.1 + 0.1, a hair
    under) from rounding down into the window before."""
    return np.floor(np.asarray(t) / every + 1e-6) * every


def read_trace(folder: str | Path) -> Trace:
    """The trace in `folder`, checked against the schema: a missing file, a corrupt
    one, a missing column or a wrong summary field is a TraceError that names it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TraceError(f"trace folder not found: {folder}")
    missing = [f for f in ("summary.json", "timeseries.parquet") if not (folder / f).is_file()]
    if missing:
        raise TraceError(f"{folder} is not a complete trace: missing {', '.join(missing)} (write one with `tierlab simulate MODEL --out {folder}`)")
    try:
        summary = json.loads((folder / "summary.json").read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise TraceError(f"{folder / 'summary.json'} is not valid JSON ({e}); write the trace again") from None
    check_summary(summary, str(folder / "summary.json"))
    ts = _table(folder / "timeseries.parquet", TIMESERIES_COLUMNS)
    req = _table(folder / "requests.parquet", REQUEST_COLUMNS) if (folder / "requests.parquet").is_file() else None
    return Trace(summary, ts, req)


def _table(path: Path, columns: list[str]) -> pd.DataFrame:
    try:
        df = pd.read_parquet(path)
    except Exception as e:  # noqa: BLE001 — pyarrow raises several kinds for a damaged file
        raise TraceError(f"{path} is not a readable Parquet file ({type(e).__name__}: {e}); write the trace again") from None
    lacking = [c for c in columns if c not in df.columns]
    if lacking:
        raise TraceError(f"{path}: missing columns {', '.join(lacking)} (trace schema v{SCHEMA_VERSION}, see docs/trace.md)")
    return df
