"""A table kept as numpy columns until it is read: the engine's arrays become a pandas
frame on first use, or go to Parquet through pyarrow without pandas at all — whose
import alone takes longer than a small simulation's engine call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


@dataclass(frozen=True)
class Labels:
    """A label column: `codes` index `names` (a pandas Categorical, an Arrow dictionary)."""

    codes: np.ndarray
    names: list[str]


Column = np.ndarray | Labels


class Columns:
    """Named columns, built by `build` at first use (a long run's long-format series
    costs a tenth of the run, and many callers read only the summary)."""

    def __init__(self, build: Callable[[], dict[str, Column]]) -> None:
        self._build = build
        self._columns: dict[str, Column] | None = None

    def columns(self) -> dict[str, Column]:
        if self._columns is None:
            self._columns = self._build()
        return self._columns

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        cols = {k: pd.Categorical.from_codes(v.codes, v.names) if isinstance(v, Labels) else v for k, v in self.columns().items()}
        # The columns are the engine's own arrays, used by nothing else: no copy (a copy
        # into pandas' consolidated blocks doubled the records' peak memory).
        return pd.DataFrame(cols, copy=False)

    def arrow(self) -> pa.Table:
        import pyarrow as pa

        cols = self.columns()
        arrays = [pa.DictionaryArray.from_arrays(_array(v.codes), _strings(v.names)) if isinstance(v, Labels) else _array(v) for v in cols.values()]
        return pa.Table.from_arrays(arrays, names=list(cols))


# Arrow arrays over the numpy columns' own memory, from their buffers: `pa.array` would
# do it in one call, but it imports pandas to look at its argument.


def _array(col: np.ndarray) -> pa.Array:
    """A numeric column; NaN as null, as pandas writes it."""
    import pyarrow as pa

    col = np.ascontiguousarray(col)
    nan = np.isnan(col) if col.dtype.kind == "f" else None
    valid = pa.py_buffer(np.packbits(~nan, bitorder="little")) if nan is not None and nan.any() else None
    data = np.packbits(col, bitorder="little") if col.dtype == np.bool_ else col  # Arrow's booleans are bits
    return pa.Array.from_buffers(pa.from_numpy_dtype(col.dtype), len(col), [valid, pa.py_buffer(data)])


def _strings(names: list[str]) -> pa.Array:
    import pyarrow as pa

    data = [n.encode() for n in names]
    offsets = np.cumsum([0] + [len(b) for b in data], dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


def write_parquet(table: pd.DataFrame | Columns, path: Path) -> None:
    """One writer for every table of a trace: columns not yet read as a frame go to
    Arrow directly; a frame as pandas' `to_parquet` writes it (no index)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(table.arrow() if isinstance(table, Columns) else pa.Table.from_pandas(table, preserve_index=False), path)
