"""The twin from OpenTelemetry against the twin from the middleware, on the same live
run (issue 40): the Python bookstore exports its OpenTelemetry (`--otel`) while the
middleware records its own phases, so the two routes into `twin calibrate` see the
same requests. Same request types; each type's statements (the visits to the database)
exactly; the CPU per request — measured per handler by the middleware, apportioned from
the process's CPU on the OpenTelemetry route — within the tolerances below."""

from __future__ import annotations

from pathlib import Path

import pytest

import tierlab
from tierlab.experiments.twin import calibrate
from tierlab.experiments.twin.observed import calibrate_observed
from tierlab.live import testbed
from tierlab.trace import read_trace
from tierlab.trace.imports import otel

from conftest import HTTP, live_model

# Per request, the process's CPU in both routes is the same process's (the middleware's
# monitor reads it from /proc, the telemetry from os.times()); per type, the telemetry's
# share by the spans' times stands in for the handler's own CPU clock (docs/twin.md: it
# blurs the types, and no tolerance per type is claimed).
TOTAL_CPU_TOLERANCE = 0.15  # measured: 4.376 vs 4.367 ms, then 4.298 vs 4.113 (SQLite, 12 browsers, 10 threads, 5 connections)
THROUGHPUT_TOLERANCE = 0.2  # measured: middleware twin +1.3% / -1.9%, OpenTelemetry twin -2.0% / +3.1% of the live run's, in two runs


def route(t: str) -> str:
    """The page (http.route) of the mapping's request type."""
    return HTTP.requests[t].path.split("?")[0]


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    folder = tmp_path_factory.mktemp("otel-live")
    telemetry = folder / "otel.jsonl"
    model = live_model(**{"run.duration": 14, "run.warmup": 3})
    with testbed.Testbed.started(folder / "live", db="sqlite", threads=10, connections=5, otel=telemetry) as bed:
        live = bed.run(model, HTTP).write(folder / "middleware")
    # The telemetry's time 0 is its first request, the run's the load's start: within
    # milliseconds, so the same warm-up leaves out the same requests but a few.
    imported = otel.read(telemetry, window=0.1, warmup=model.spec.run.warmup).write(folder / "otel")
    return model, Path(live), Path(imported), folder


def test_same_types_and_visits(both):
    model, live, imported, _ = both
    mw, ot = read_trace(live).requests, read_trace(imported).requests
    mw_types = {route(t) for t in mw["type"].astype(str).unique()}
    assert mw_types == set(ot["type"].astype(str).unique())
    statements = mw.groupby(mw["type"].astype(str).map(route))["app.db_queries"].median()
    visits = ot.groupby(ot["type"].astype(str))["app.db_queries"].median()
    assert statements.to_dict() == visits.reindex(statements.index).to_dict()
    assert abs(len(mw) - len(ot)) <= 0.05 * len(mw)  # the same requests, but for the edges of the warm-up


def test_the_two_calibrations_agree(both):
    """Each type's CPU is where the two routes differ: the middleware reads each
    handler's thread clock, the telemetry has only the process's CPU to share out by
    the spans' times. The process's CPU per request is the same in both (the same
    process, within TOTAL_CPU_TOLERANCE), the heaviest type is the same, and the two
    twins, simulated at the run's load, serve what the run served within
    THROUGHPUT_TOLERANCE."""
    model, live, imported, folder = both
    by_middleware = calibrate([live], model)
    by_telemetry = calibrate_observed([str(imported)], threads=10, clients=12, think=0.02)
    a = by_middleware.demands.rename(index=route)
    b = by_telemetry.demands.reindex(a.index)
    # The middleware's CPU per request: the handler's, plus the process's CPU outside
    # the handlers (the service demand law's residual), the same for every request.
    mw_cpu = a["cpu_time"] + max(0.0, by_middleware.law["outside_handlers"])
    weights = a["requests"] / a["requests"].sum()
    total_mw, total_ot = float((mw_cpu * weights).sum()), float((b["cpu_time"] * weights).sum())
    print(f"\nCPU per request: middleware {total_mw * 1e3:.3f} ms, OpenTelemetry {total_ot * 1e3:.3f} ms")
    for t in a.index:
        print(
            f"{t:24s} served {a.loc[t, 'requests']:4.0f} / {b.loc[t, 'requests']:4.0f}  CPU {mw_cpu[t] * 1e3:7.3f} / {b.loc[t, 'cpu_time'] * 1e3:7.3f} ms"
            f"  statements {a.loc[t, 'db_queries']:6.2f} / {b.loc[t, 'db_queries']:6.2f}"
        )
    assert total_ot == pytest.approx(total_mw, rel=TOTAL_CPU_TOLERANCE)
    assert mw_cpu.idxmax() == b["cpu_time"].idxmax() == "/execute_search"
    assert by_telemetry.model["tiers"]["app"]["pools"]["db"]["size"] == 5  # from the pool's metrics
    served = read_trace(live).summary["throughput"]
    for name, cal in (("middleware", by_middleware), ("OpenTelemetry", by_telemetry)):
        twin = tierlab.load_model(cal.write(folder / f"twin-{name}.yaml")).with_run(duration=30, warmup=3)
        simulated = tierlab.simulate(twin).summary["throughput"]
        print(f"{name} twin: {simulated:.1f} requests/s, live {served:.1f}")
        assert simulated == pytest.approx(served, rel=THROUGHPUT_TOLERANCE), name
