"""A tier pinned to cores of its own gets those cores' own account in its trace
(`cpu_pinned`): everything they did — the process, and the kernel's work for it that
its CPU time does not count — read from the cores, not from the process."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from tierlab.live import monitor


def test_the_pinned_cores_account_is_recorded_per_window(monkeypatch):
    t0 = time.monotonic()

    def cpu_times(percpu: bool = False):
        # Core 1 busy 0.8 of the time (0.5 user, 0.1 system, 0.2 softirq), core 0 0.3.
        s = time.monotonic() - t0
        cores = [
            SimpleNamespace(user=0.3 * s, nice=0.0, system=0.0, irq=0.0, softirq=0.0, steal=0.0),
            SimpleNamespace(user=0.5 * s, nice=0.0, system=0.1 * s, irq=0.0, softirq=0.2 * s, steal=0.0),
        ]
        if percpu:
            return cores
        return SimpleNamespace(**{f: sum(getattr(c, f) for c in cores) for f in vars(cores[0])})

    monkeypatch.setattr(monitor.psutil, "cpu_times", cpu_times)
    with monitor.Monitor({}, window=0.05, pinned={"app": [1], "db": []}) as mon:
        time.sleep(0.3)
    rows = mon.frame()
    pinned = rows[rows.metric == "cpu_pinned"]
    assert len(pinned) >= 2 and set(pinned.tier) == {"app"}  # a tier with no CPUs of its own has no row
    assert pinned.value.to_numpy() == pytest.approx(0.8, rel=0.02)  # read a moment after the window's clock
    assert sorted(pinned.t) == [pytest.approx(0.05 * i) for i in range(len(pinned))]  # every window, none missing


def test_a_monitor_without_pinned_cores_records_no_account(monkeypatch):
    with monitor.Monitor({}, window=0.05) as mon:
        time.sleep(0.12)
    assert "cpu_pinned" not in set(mon.frame().metric)
