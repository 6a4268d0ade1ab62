"""A trace folder: `requests.parquet`, `timeseries.parquet` and `summary.json`, in
memory as a `Trace`; `read_trace` validates a folder against the schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import TraceError
from .columns import Columns, write_parquet
from .schema import REQUEST_COLUMNS, SCHEMA_VERSION, STATEMENT_COLUMNS, STATUSES, TIMESERIES_COLUMNS, Summary, check_summary

if TYPE_CHECKING:
    import pandas as pd


class Trace:
    """One run, simulated or live. `requests` is None when records were off;
    `statements` (the database's per-statement figures) only a live run on PostgreSQL has.
    `timeseries` and `requests` may be given as `Columns`: they become frames at the
    first read, and a trace written before that is written without pandas."""

    def __init__(
        self,
        summary: Summary,
        timeseries: pd.DataFrame | Columns,
        requests: pd.DataFrame | Columns | None = None,
        statements: pd.DataFrame | None = None,
    ) -> None:
        self.summary = summary
        self._timeseries = timeseries
        self._requests = requests
        self.statements = statements

    @property
    def timeseries(self) -> pd.DataFrame:
        if isinstance(self._timeseries, Columns):
            self._timeseries = self._timeseries.frame()
        return self._timeseries

    @timeseries.setter
    def timeseries(self, frame: pd.DataFrame) -> None:
        self._timeseries = frame

    @property
    def requests(self) -> pd.DataFrame | None:
        if isinstance(self._requests, Columns):
            self._requests = self._requests.frame()
        return self._requests

    @requests.setter
    def requests(self, frame: pd.DataFrame | None) -> None:
        self._requests = frame

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
        tables = {"requests": self._requests, "statements": self.statements, "timeseries": self._timeseries}
        for name, table in tables.items():
            if table is not None:
                write_parquet(table, out / f"{name}.parquet")
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
    twice = int(ts.duplicated(["t", "tier", "server", "resource", "metric"]).sum())
    if twice:
        raise TraceError(f"{folder / 'timeseries.parquet'}: {twice} duplicated (t, tier, server, resource, metric) rows; write the trace again")
    req = _table(folder / "requests.parquet", REQUEST_COLUMNS) if (folder / "requests.parquet").is_file() else None
    stm = _table(folder / "statements.parquet", STATEMENT_COLUMNS) if (folder / "statements.parquet").is_file() else None
    return Trace(summary, ts, req, stm)


def _table(path: Path, columns: list[str]) -> pd.DataFrame:
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except Exception as e:  # noqa: BLE001 — pyarrow raises several kinds for a damaged file
        raise TraceError(f"{path} is not a readable Parquet file ({type(e).__name__}: {e}); write the trace again") from None
    lacking = [c for c in columns if c not in df.columns]
    if lacking:
        raise TraceError(f"{path}: missing columns {', '.join(lacking)} (trace schema v{SCHEMA_VERSION}, see docs/trace.md)")
    problem = _column_problem(df)
    if problem:
        raise TraceError(f"{path}: {problem} (trace schema v{SCHEMA_VERSION}, see docs/trace.md); write the trace again")
    return df


# Label columns; every other column holds numbers. A phase column's server is -1 where
# the request never reached that tier, and a window's mean response time is NaN when
# nothing completed in it: the only negative and the only missing values allowed.
_LABELS = {"type", "status", "tier", "resource", "metric", "query"}


def _column_problem(df: pd.DataFrame) -> str | None:
    """What is wrong with a table's values, or None: a numeric column holding text, an
    infinite, missing or negative figure, a status the schema does not know."""
    import pandas as pd

    for c in df.columns:
        if c in _LABELS:
            continue
        if not pd.api.types.is_numeric_dtype(df[c]) or pd.api.types.is_bool_dtype(df[c]):
            return f"column {c} holds {df[c].dtype} values, not numbers"
        v = df[c].to_numpy(dtype=float)
        missing_ok = c == "value"
        bad = np.isinf(v) | (np.isnan(v) & (not missing_ok)) | ((v < 0) & (not str(c).endswith(".server")))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            return f"column {c}, row {i}: {v[i]} is not a non-negative finite number"
    if "status" in df.columns:
        unknown = sorted(set(df["status"].astype(str)) - set(STATUSES))
        if unknown:
            return f"column status: unknown value(s) {', '.join(map(repr, unknown[:3]))} (known: {', '.join(STATUSES)})"
    return None
