"""SIGTERM (kill, `timeout`, a service manager, a CI's cancel) stops a run as Ctrl-C
does: the partial run is kept and reported, a testbed torn down — not the process
dying on the spot with its servers left serving."""

from __future__ import annotations

import signal

import pytest

import tierlab
from tierlab._signals import stop_on_sigterm

from conftest import EXAMPLES


@pytest.fixture
def sigterm_stops():
    before = signal.getsignal(signal.SIGTERM)
    stop_on_sigterm()
    yield
    signal.signal(signal.SIGTERM, before)


def test_sigterm_is_raised_as_keyboard_interrupt(sigterm_stops):
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
        signal.raise_signal(signal.SIGTERM)


def test_a_simulation_stopped_by_sigterm_keeps_what_was_measured(sigterm_stops):
    calls = []

    def progress(f):
        calls.append(f)
        if len(calls) == 2:
            signal.raise_signal(signal.SIGTERM)

    with pytest.raises(tierlab.RunInterrupted) as e:
        tierlab.simulate(EXAMPLES / "rubbos_3tier.yaml", duration=3_000, warmup=1, progress=progress)
    t = e.value.result
    assert t.summary["interrupted"] and 0 < t.summary["simulated_until"] < 3_000
    assert t.summary["requests"]["ok"] == len(t.requests[t.requests.status == "ok"]) > 0
