"""The one way a run — simulated or live — reports that Ctrl-C stopped it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._core import Output
    from ..trace import Trace


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or an exception from the progress callback) stopped the run; `.result`
    holds what was measured up to that point."""

    def __init__(self, result: Trace):
        super().__init__("run interrupted")
        self.result = result


def raise_if_stopped(out: Output, trace: Trace) -> None:
    """Re-raise what stopped a run of the Rust core: Ctrl-C as RunInterrupted (with
    the partial trace), any other exception (from a progress callback) as itself."""
    stopped = out["stopped_by"]
    if stopped is None:
        return
    if isinstance(stopped, KeyboardInterrupt):
        raise RunInterrupted(trace) from stopped
    raise stopped
