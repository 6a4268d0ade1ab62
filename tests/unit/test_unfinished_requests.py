"""Issue 44.1 on the simulator: a request sent and not finished by the end of the run is
counted (`requests.unfinished`, overall and per type), and a run whose backlog grew is
overloaded in every verdict, though it rejected nothing. (The identity over simulated,
live and imported traces together: tests/live/test_every_request_counted.py.)"""

from __future__ import annotations

import pytest

import tierlab
from tierlab.analysis.knee import saturation_load
from tierlab.experiments.ramp import ramp
from tierlab.experiments.sizing import all_served, max_sustainable_rate
from tierlab.experiments.sizing.profiling import _profile_run
from tierlab.live.loadgen_metrics import _Progress
from tierlab.trace.outcome import UNFINISHED_SHARE, backlog_note, backlogged, unfinished_share
from tierlab.trace.schema import OUTCOMES, check_summary, sent


def _queue_without_timeout(rate: float) -> tierlab.LoadedModel:
    """Sessions of one request holding the one connection for 0.1 s, waiting as long as
    it takes (no timeout): capacity 10 sessions/s, and past it nothing is ever rejected
    — the queue just grows."""
    pools = {"threads": {"kind": "threads", "size": 1000}, "db": {"kind": "connections", "size": 1}}
    job = [{"acquire": "threads"}, {"acquire": "db"}, {"delay": 0.1}, {"release": "db"}, {"release": "threads"}]
    return tierlab.load_model(
        {
            "run": {"duration": 110, "warmup": 10, "seed": 3, "records": True},
            "tiers": {"app": {"pools": pools}},
            "requests": {"job": {"app": job}},
            "workload": {"population": {"session_rate": rate}, "chain": {"matrix": {"job": {"END_OF_SESSION": 1}}, "start": "job"}},
        }
    )


def test_an_overloaded_simulation_rejects_nothing_and_is_judged_overloaded():
    # Offered 20 sessions/s, served 10: after 100 measured seconds about 1,000 wait.
    trace = tierlab.simulate(_queue_without_timeout(20.0))
    r = trace.summary["requests"]
    assert r["rejected"] + r["timeout"] + r["error"] == 0 and r["ok"] > 0  # what the old verdict read: "all served"
    # One connection, 0.1 s each: 10 per second, of which the first ~100 are the
    # warm-up's backlog (not measured).
    assert r["ok"] == pytest.approx(10 * 100 - 10 * 10, abs=15)
    assert r["unfinished"] == sent(r) - r["ok"] and unfinished_share(r) == pytest.approx(0.5, abs=0.05)
    assert backlogged(r) and not all_served(trace)
    assert "overloaded" in backlog_note(trace.summary)
    # The profiling tests' view: half the requests sent were not served.
    assert _profile_run(trace)[2] == pytest.approx(0.5, abs=0.05)


def test_a_run_that_keeps_up_leaves_about_lambda_w_unfinished_and_serves_all():
    trace = tierlab.simulate(_queue_without_timeout(5.0))
    r = trace.summary["requests"]
    # Little: about λ·W = 5 · (0.1 + the M/D/1 wait 0.05) ≈ 0.75 in the system at the end.
    assert r["unfinished"] <= 10 and unfinished_share(r) < UNFINISHED_SHARE
    assert all_served(trace) and backlog_note(trace.summary) is None


def test_the_counts_add_up_per_type_and_the_records_are_the_finished_ones():
    trace = tierlab.simulate(_queue_without_timeout(20.0))
    s = trace.summary
    # Each session is one request started with it: sessions started = requests sent.
    assert sent(s["requests"]) == s["sessions"]["started"]
    assert len(trace.requests) == sent(s["requests"]) - s["requests"]["unfinished"]
    for k in OUTCOMES:
        assert s["requests"][k] == sum(t["requests"][k] for t in s["types"].values()), k


def test_a_capacity_search_takes_a_growing_backlog_as_past_capacity():
    """The simulated form of the issue's wrong answer: climbing from 8 sessions/s, no
    rate rejects anything (the old verdict passed every one, up to the last round);
    the search must stop below the capacity, 10. With seed 1, 9 sessions/s (ρ = 0.9)
    already leaves 19 of 929 unfinished, 2%: a queue near saturation over 100 s."""
    model = _queue_without_timeout(8.0)
    lines: list[str] = []
    result, trials = max_sustainable_rate(model, [(1000, 1)], 8.0, step=1.0, runs=1, workers=1, log=lines.append)
    assert result.to_dict(orient="records") == [{"M": 1000, "N": 1, "lambda_max": 8.0, "bracketed": True}]
    assert trials[["lambda", "passed"]].values.tolist() == [[8.0, True], [9.0, False]]
    # Per round, the rate and its outcome.
    rounds = [x for x in lines if x.startswith("capacity search round ") and ", run " not in x]
    assert rounds[0] == "capacity search round 1: M=1000 N=1 at 8.000 sessions/s: 1 of 1 runs served all, sustained; next 9.000 sessions/s"
    assert rounds[-1] == "capacity search round 2: M=1000 N=1 at 9.000 sessions/s: 0 of 1 runs served all, not sustained; λ_max = 8.000 sessions/s"
    assert "19 unfinished (2.0% of those sent)" in next(x for x in lines if "round 2, run 1/1" in x)


def test_a_schema_3_summary_reads_its_in_flight_count_as_unfinished():
    s = tierlab.simulate(_queue_without_timeout(5.0)).summary
    old = {**s, "schema_version": 3, "in_flight_at_end": 7, "missing": {}}
    old["requests"] = {k: v for k, v in s["requests"].items() if k != "unfinished"}
    old["types"] = {n: {**t, "requests": {k: v for k, v in t["requests"].items() if k != "unfinished"}} for n, t in s["types"].items()}
    check_summary(old)
    assert old["requests"]["unfinished"] == 7 and old["schema_version"] == tierlab.trace.SCHEMA_VERSION
    assert "types.*.requests.unfinished" in old["missing"]


def test_the_load_generators_metrics_count_what_it_sent_and_what_is_still_out():
    """Prometheus: requests sent, and in flight (sent − finished); at the end of a run,
    those left unfinished."""
    p = _Progress(["a"])
    p(1.0, 7, 1, 10)
    samples = {s.name: s.value for m in p.collect() for s in m.samples}
    assert samples["tierlab_loadgen_requests_sent_total"] == 10
    assert samples["tierlab_loadgen_requests_finished_total"] == 7
    assert samples["tierlab_loadgen_requests_in_flight"] == 3


def test_a_ramp_saturates_at_the_first_overloaded_step_though_its_throughput_still_rises():
    """Loads 4, 6, 8, 11 against a capacity of 10: at 11 the throughput is the ramp's
    highest (9.8), which alone reads as "still rising, no saturation"; its backlog
    (145 of 1,128 unfinished) says it is past capacity."""
    table, knee = ramp(_queue_without_timeout(4.0), [4, 6, 8, 11], workers=1, progress=None)
    assert table.overloaded.tolist() == [0.0, 0.0, 0.0, 1.0] and table.unfinished.iloc[-1] > 0.1 * table.ok.iloc[-1]
    assert saturation_load(table.load, table.throughput) is None  # by the throughput alone
    assert knee.saturation == 11.0 and table.saturated.tolist() == [False, False, False, True]


def test_a_run_too_short_to_tell_says_so():
    """7 s pages in a 60 s window: a run that keeps up leaves ~12% in flight, so the 1%
    rule cannot tell it from a backlog; the note says to measure longer, and how long."""
    counts = {"ok": 880, "rejected": 0, "timeout": 0, "error": 0, "unfinished": 120}
    long_pages = {"requests": counts, "response_time": {"mean": 7.0}, "measured_seconds": 60.0}
    note = backlog_note(long_pages)  # type: ignore[arg-type]
    assert note is not None and "11.7% of the 60 s measured" in note and "measure longer (≥ 700 s)" in note
    quick_pages = long_pages | {"response_time": {"mean": 0.1}}
    assert "measure longer" not in backlog_note(quick_pages)  # type: ignore[arg-type,operator]
