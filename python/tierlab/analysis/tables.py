"""Tables a user hands in (a measurement CSV, a profile's files): read so that an
empty, binary or ragged file is an InputError naming the file and the fix, never a
parser's exception."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError


def read_csv(path: str | Path, columns: tuple[str, ...], **read: Any) -> pd.DataFrame:
    """The CSV at `path`, which must have `columns` (more are allowed)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"table not found: {path}")
    try:
        df = pd.read_csv(path, skipinitialspace=True, **read)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path} is empty; it needs a header line with columns {','.join(columns)} and one row per measurement") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path} is not a text (UTF-8) CSV file: byte {e.start} cannot be decoded") from None
    except pd.errors.ParserError as e:
        raise InputError(f"{path}: not a regular CSV table ({e}); every row needs the same columns ({','.join(columns)})") from None
    except OSError as e:  # unreadable, or a folder
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}; the table needs columns {','.join(columns)}")
    return df


def read_json(path: str | Path, keys: tuple[str, ...]) -> dict:
    """The JSON object at `path`, which must have `keys`."""
    path = Path(path)
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"{path} is not valid JSON ({e}); write it again") from None
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    missing = [k for k in keys if k not in data] if isinstance(data, dict) else list(keys)
    if missing:
        raise InputError(f"{path}: missing key(s) {', '.join(missing)}; write it again")
    return data


def positive_numbers(df: pd.DataFrame, columns: tuple[str, ...], where: str) -> pd.DataFrame:
    """`columns` of a table read as text, as floats; the first value that is not a
    positive finite number is an InputError naming its line (header = line 1)."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{where}: missing column(s) {', '.join(missing)}; the table needs columns {','.join(columns)}")
    out = pd.DataFrame(index=df.index)
    for col in columns:
        values = pd.to_numeric(df[col], errors="coerce")
        bad = values.isna() | ~np.isfinite(values) | (values <= 0)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"{where} line {i + 2}: {col} = {df[col].iloc[i]!r}; {col} must be a positive number")
        out[col] = values.astype(float)
    return out.reset_index(drop=True)
