"""Models the online-control tests share (tests/unit/test_control_sim.py,
test_report_control.py): a CPU behind a thread pool under MMPP bursts, and a gradient
controller for it."""

from __future__ import annotations

from conftest import single_request_sessions

BOUNDS = [4, 64]


def bursty(control: dict | None, seed: int = 5) -> dict:
    """One CPU (10 ms a request) behind 40 threads; requests arrive at 32/s in calm phases
    and 128/s in bursts (over the CPU's 100/s), phases a minute long on average (an MMPP
    of dispersion 1729 with half the time in bursts)."""
    app = {"pools": {"threads": {"kind": "threads", "size": 40}}, "stations": {"cpu": {"kind": "cpu", "cores": 1}}}
    program = {"app": [{"acquire": "threads"}, {"cpu": {"exponential": 0.01}}, {"release": "threads"}]}
    m = single_request_sessions(80.0, {"app": app}, program, duration=900, warmup=0, window=1.0, seed=seed, records=True)
    m["workload"]["burstiness"] = {"dispersion": 1729, "burst_share": 0.5, "ratio": 4}
    if control is not None:
        m["control"] = control
    return m


GRADIENT = {"strategy": "gradient", "interval": 5, "bounds": {"threads": BOUNDS}, "gradient": {"long_window": 60, "warmup": 4}}
