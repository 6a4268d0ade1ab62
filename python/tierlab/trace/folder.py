"""A trace folder: `requests.parquet`, `timeseries.parquet` and `summary.json`, in
memory as a `Trace`; `read_trace` validates a folder against the schema."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError, TraceError
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

    def write(self, folder: str | Path, force: bool = False) -> Path:
        """Write the trace to `folder` whole: into a folder holding no trace, or with
        `force` in place of the one it holds (every file of it, none left behind).
        The files are written aside and moved in at the end, so an error while
        writing leaves the folder as it was."""
        out = trace_folder(folder, force)
        out.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".writing-", dir=out))  # beside: a move is a rename
        try:
            tables = {"requests": self._requests, "statements": self.statements, "timeseries": self._timeseries}
            for name, table in tables.items():
                if table is not None:
                    write_parquet(table, staging / f"{name}.parquet")
            (staging / "summary.json").write_text(json.dumps(self.summary, indent=2, sort_keys=True, allow_nan=False) + "\n")
            for name in TRACE_FILES:
                _remove(out / name)
            for f in staging.iterdir():
                os.replace(f, out / f.name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return out

    def series(self, tier: str, metric: str, resource: str = "", server: int | None = None) -> pd.DataFrame:
        """One metric as a frame indexed by window start, one column per server."""
        ts = self.timeseries
        sel = ts[(ts.tier == tier) & (ts.metric == metric) & (ts.resource == resource)]
        if server is not None:
            sel = sel[sel.server == server]
        return sel.pivot(index="t", columns="server", values="value")


# Every file a trace folder may hold: a trace written over another replaces them all
# (a run without records had left the older run's requests.parquet beside its summary).
TRACE_FILES = ("summary.json", "timeseries.parquet", "requests.parquet", "statements.parquet")


def trace_folder(folder: str | Path, force: bool = False) -> Path:
    """`folder` as the place for a new trace: refused if it is a file, or if it holds
    a trace and `force` is not given. Commands call it before their run too, so that
    a long run does not end in the refusal."""
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} is a file; give a folder for the trace")
    held = [name for name in TRACE_FILES if os.path.lexists(out / name)]
    if held and not force:
        raise InputError(f"{out} already holds a trace ({', '.join(held)}); give another folder, or --force to replace that trace whole")
    return out


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def window_of(t: Any, every: float) -> Any:
    """Start of the `every`-second window holding time `t` (array or scalar). The small
    offset keeps a window start such as 0.3 (summed up as 0.1 + 0.1 + 0.1, a hair
    under) from rounding down into the window before."""
    return np.floor(np.asarray(t) / every + 1e-6) * every


def read_trace(folder: str | Path) -> Trace:
    """The trace in `folder`, checked against the schema: a missing file, a corrupt
    one, a missing column, a wrong summary field or a request given twice is a
    TraceError that names it. `requests.parquet` and `statements.parquet` may be
    absent (records off, no database statements), not anything else than a file."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TraceError(f"trace folder not found: {folder}")
    for name in TRACE_FILES:
        path = folder / name
        if os.path.lexists(path) and not path.is_file():
            what = "a folder" if path.is_dir() else "a link to nothing (or a loop of links)" if path.is_symlink() else "not a regular file"
            raise TraceError(f"{path} is {what}, not a file of the trace; write the trace again")
    missing = [f for f in ("summary.json", "timeseries.parquet") if not (folder / f).is_file()]
    if missing:
        raise TraceError(f"{folder} is not a complete trace: missing {', '.join(missing)} (write one with `tierlab simulate MODEL --out {folder}`)")
    try:
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise TraceError(f"{folder / 'summary.json'} is not valid JSON ({e}); write the trace again") from None
    except OSError as e:
        raise TraceError(f"cannot read {folder / 'summary.json'}: {e.strerror}") from None
    check_summary(summary, str(folder / "summary.json"), strict=True)
    ts = _table(folder / "timeseries.parquet", TIMESERIES_COLUMNS)
    twice = int(ts.duplicated(["t", "tier", "server", "resource", "metric"]).sum())
    if twice:
        raise TraceError(f"{folder / 'timeseries.parquet'}: {twice} duplicated (t, tier, server, resource, metric) rows; write the trace again")
    req = _table(folder / "requests.parquet", REQUEST_COLUMNS) if (folder / "requests.parquet").is_file() else None
    if req is not None:
        twice = req["id"].duplicated()
        if twice.any():
            first = int(np.flatnonzero(twice.to_numpy())[0])
            raise TraceError(
                f"{folder / 'requests.parquet'}: {int(twice.sum())} rows repeat a request id (the first: row {first}, id {req['id'].iloc[first]}); "
                "a request is one row: write the trace again"
            )
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
