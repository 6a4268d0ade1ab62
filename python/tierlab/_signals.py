"""SIGTERM made to stop a run as Ctrl-C does. Light (the standard library only), so
the CLI installs it before it imports anything heavy."""

from __future__ import annotations

import signal


def stop_on_sigterm() -> None:
    """`kill`, `timeout`, a service manager or a CI's cancel send SIGTERM, and Python's
    default for it is to die on the spot, leaving a live testbed's servers running and
    no partial trace. Raised as KeyboardInterrupt where the program is, it takes the
    Ctrl-C path: servers torn down, the partial run kept and reported. (A job started
    with `&` by a non-interactive shell ignores SIGINT, so SIGTERM is the only polite
    way to stop it.) Main thread only, as signal.signal is."""

    def stop(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)
