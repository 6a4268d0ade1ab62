"""A live run's requests grouped by the concurrency they met, and each one's handler CPU
relative to its type's (investigations/twin/cpu_growth.py and cpu_growth_live.py): does
a request's own CPU grow with the requests or the threads around it?"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .measured import threads_at_start

MARGIN = 2.0  # seconds at each end of the measured period


def label(lo: int, hi: int | None) -> str:
    return f"{lo}+" if hi is None else str(lo) if lo == hi else f"{lo}-{hi}"


def others_at_send(r: pd.DataFrame) -> np.ndarray:
    """Per request, the other requests sent before it and not yet answered."""
    sent, answered = np.sort(r.start.to_numpy()), np.sort(r.end.to_numpy())
    t = r.start.to_numpy()
    return np.searchsorted(sent, t, side="left") - np.searchsorted(answered, t, side="right")


def requests(folder: Path) -> pd.DataFrame:
    """The run's served requests sent away from its ends (MARGIN: the records hold only
    requests sent after the warm-up and answered before the end, so near the ends their
    counts would miss some of the others), with `others`, `type` and the threads held
    and computing when each got its thread (`threads_at_start`)."""
    r = pd.read_parquet(folder / "requests.parquet")
    r = r.assign(others=others_at_send(r), type=r.type.astype(str))
    r = r.join(threads_at_start(r, "app"))
    lo, hi = r.start.min() + MARGIN, r.end.max() - MARGIN
    return r[(r.status == "ok") & (r.start >= lo) & (r.start <= hi)]


def empty_base(runs: dict[str, pd.DataFrame]) -> pd.Series:
    """Per type, the mean handler CPU of the runs' requests sent to an empty system."""
    both = pd.concat(runs.values())
    return both[both.others == 0].groupby("type")["app.cpu_time"].mean()


def relative(r: pd.DataFrame, base: pd.Series) -> pd.Series:
    """Each request's handler CPU ÷ its type's in `base`."""
    return r["app.cpu_time"] / r.type.map(base)


def binned(count: pd.Series, rel: pd.Series, bins: list[tuple[int, int | None]], name: str) -> pd.DataFrame:
    """Per bin of `count` (a column `name`, labelled as `label` does): the requests with
    a relative CPU, and its mean (None for an empty bin)."""
    rows = []
    for lo, hi in bins:
        inside = (count >= lo) & (count <= (hi if hi is not None else np.inf)) & rel.notna()
        rows.append({name: label(lo, hi), "requests": int(inside.sum()), "cpu_vs_empty": float(rel[inside].mean()) if inside.any() else None})
    return pd.DataFrame(rows)
