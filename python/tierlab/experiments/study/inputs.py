"""The rounding rule: a figure computed by one step and fed to the engine as an input
(a capacity offered as a rate, a fitted parameter) is rounded first, so that the last
bit of a numerical library — which a new numpy, scipy or pandas may change — cannot
change the run. Six significant digits are far finer than any such figure is known
(a capacity's run-to-run spread is ~1%) and far coarser than a library's last bit
(~1e-16 relative): two installs then agree unless a figure lies within that last bit
of a rounding boundary, a chance of about 1e-10 per figure."""

from __future__ import annotations

SIGNIFICANT = 6


def as_input(x: float) -> float:
    """`x` to SIGNIFICANT significant digits, as a plain float (numpy scalars too)."""
    return float(f"{float(x):.{SIGNIFICANT}g}")
