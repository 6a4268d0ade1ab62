"""Online control of a running testbed's pools (`tierlab control`, docs/control.md): the
controller of `crates/control` — the one the simulator's engine calls — fed each
interval's observation of the live servers, its decisions applied through their admin
endpoints and logged in the trace's format; the twin strategy's, decided in Python
(`TwinController`), put through the same controller's guards."""

from ...run.twin import Bounds, TwinController
from .live import LiveObserver, control_loop, guard_options, parse_bounds, read_log

__all__ = ["Bounds", "LiveObserver", "TwinController", "control_loop", "guard_options", "parse_bounds", "read_log"]
