"""Numbers as people read them, one rule for every table a command prints and every
table of `tierlab report`: a count whole (`1,716`, never `1716.0`), a flag as yes/no
(never `1.0`), a measured figure to three significant digits without an exponent
(`52.3`, `0.0413`), a missing one as a dash. A figure's unit (ms, %) is the caller's:
it scales the column before and names the unit in the heading."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

MISSING = "—"


def figure(x: Any) -> str:
    """`x` rounded to what it means (see the module): at most three significant digits,
    whole numbers and anything from 100 on without decimals; below 0.001 with an
    exponent (`3.2e-05`), which fixed decimals would print as 0."""
    if x is None:
        return MISSING
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if not isinstance(x, numbers.Real):
        return str(x)
    if isinstance(x, numbers.Integral):
        return f"{int(x):,}"
    x = float(x)
    if not math.isfinite(x):
        return MISSING if math.isnan(x) else ("∞" if x > 0 else "-∞")
    if x == 0:
        return "0"  # -0.0 too
    if x == round(x) or abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) < 0.001:
        return f"{x:.2g}"
    # Trailing zeros say nothing here: "0.1 s windows", not "0.100".
    return f"{x:.{2 - math.floor(math.log10(abs(x)))}f}".rstrip("0").rstrip(".")


def duration(seconds: float) -> str:
    """A time in the unit that reads best: `1.26 ms`, `177 ms`, `2.5 s`."""
    return f"{figure(seconds)} s" if abs(seconds) >= 1 else f"{figure(seconds * 1000)} ms"
