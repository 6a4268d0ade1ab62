"""The trace: what one run — simulated or live — measured, in one schema
(docs/trace.md): `requests.parquet`, `timeseries.parquet` and `summary.json` in one
folder. The schema is light; the tables (pandas) load on first use of `Trace`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from .schema import PHASES, SCHEMA_VERSION, Summary

if TYPE_CHECKING:
    from .folder import Trace, read_trace, window_of

__all__ = ["PHASES", "SCHEMA_VERSION", "Summary", "Trace", "read_trace", "window_of"]
__getattr__ = lazy_exports(__name__, {"Trace": "folder", "read_trace": "folder", "window_of": "folder"})
