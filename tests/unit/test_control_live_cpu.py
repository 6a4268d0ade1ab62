"""The live observation's CPU (docs/control.md, "What a controller sees"): each server
process's CPU seconds at the interval's ends, the cores busy over the machine's cores —
the monitor's `cpu utilization` — and their mean over the servers, as the simulated
observation's mean over the tier's servers; null where a process was not read."""

from __future__ import annotations

import os

import pytest

from tierlab.experiments.control.live import cpu_share
from tierlab.live.monitor import cpu_seconds


def test_the_share_is_the_mean_of_the_servers_cores_busy_over_the_machine_s():
    # Two servers over 5 s on 4 cores: 2 s and 6 s of CPU used, 0.1 and 0.3 of the machine.
    assert cpu_share([10.0, 20.0], [12.0, 26.0], 5.0, 4) == pytest.approx(0.2)
    assert cpu_share([3.0], [3.0], 5.0, 2) == 0.0


@pytest.mark.parametrize(
    ("before", "after", "seconds"),
    [
        ([], [], 5.0),  # no processes given
        ([10.0, None], [12.0, 13.0], 5.0),  # a server not running at the start
        ([10.0, 11.0], [12.0, None], 5.0),  # one that ended in the interval
        ([10.0], [12.0, 13.0], 5.0),  # the servers changed
        ([10.0], [12.0], 0.0),  # no time
    ],
)
def test_a_share_of_what_was_not_read_is_null(before, after, seconds):
    assert cpu_share(before, after, seconds, 2) is None


def test_a_process_s_cpu_seconds_grow_with_its_work_and_a_missing_one_is_none():
    start = cpu_seconds(os.getpid())
    assert start is not None
    total = 0
    for i in range(2_000_000):
        total += i % 7
    after = cpu_seconds(os.getpid())
    assert after is not None and after > start
    # A pid no process has (beyond the kernel's limit).
    assert cpu_seconds(2**22 + 1) is None
