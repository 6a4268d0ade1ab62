"""One model, two executions, one trace: the same model simulated and run live on the
SQLite testbed gives two traces that `read_trace` validates against one schema, and
that every analysis and the summary printer read alike."""

from __future__ import annotations

import subprocess
import sys

import pytest
from rich.console import Console

import tierlab
from tierlab.analysis.bottleneck import bottleneck, breakdown, resources
from tierlab.analysis.fluctuations import fluctuations
from tierlab.analysis.profile import request_profile
from tierlab.experiments.ramp import _point
from tierlab.report.summary import print_summary

from conftest import HTTP, ROOT, live_model, running_testbed

SOURCES = ["simulation", "live"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Each execution's trace, written and read back (so every test sees what a user
    reading the folder sees)."""
    model = live_model(**{"run.duration": 12, "workload.session_end": {"after_requests": 20}})  # sessions end: L is measurable
    out = {}
    out["simulation"] = tierlab.simulate(model).write(tmp_path_factory.mktemp("simulated"))
    with running_testbed("sqlite", tmp_path_factory.mktemp("sqlite") / "live") as bed:
        out["live"] = bed.run(model, HTTP).write(tmp_path_factory.mktemp("live"))
    return out


@pytest.fixture(params=SOURCES)
def trace(request, folders):
    return tierlab.read_trace(folders[request.param])


def test_both_traces_have_the_models_tiers_and_pools(trace):
    s = trace.summary
    assert s["source"] in SOURCES
    app = s["tiers"]["app"]["servers"][0]
    assert set(app["pools"]) == {"threads", "db"}
    assert app["pools"]["threads"]["size"] == 10 and app["pools"]["db"]["size"] == 5  # the model's, live too
    assert app["pools"]["db"]["acquired"] >= s["requests"]["ok"]  # every served request took a connection
    assert app["visits"] >= s["requests"]["ok"] * 0.95  # requests in flight at the edges aside
    assert "cpu" in app["stations"] and 0 < app["stations"]["cpu"]["utilization"] <= 1
    series = set(zip(trace.timeseries.resource.astype(str), trace.timeseries.metric.astype(str)))
    assert {("", "arrivals"), ("db", "busy_max"), ("threads", "queued"), ("cpu", "utilization")} <= series


def test_print_summary(trace):
    console = Console(record=True, width=200)
    print_summary(trace, console)
    text = console.export_text()
    assert f"({trace.summary['source']})" in text and "SRES" in text
    assert "app" in text and "db" in text and "threads" in text and "cpu" in text


def test_request_profile(trace):
    p = request_profile(trace)
    assert p.tier == "app" and p.L > 1 and p.sessions > 0
    table = p.table()
    assert table.loc["SRES", "db_requests"] == 101 and table.loc["BUYC", "db_requests"] == 1  # transaction-wide caching
    assert (table[["p", "q", "wait_db", "wait_thread"]] >= 0).all().all()
    uses_db = table["db_requests"] > 0
    assert (table.loc[uses_db, "q"] > 0).all() and (table.loc[~uses_db, "q"] == 0).all()


def test_bottleneck(trace):
    r = resources(trace)
    app = r[r.tier == "app"]
    assert {"threads", "db", "cpu"} <= set(app.resource)
    assert ((r.level >= 0) & (r.pinned >= 0) & (r.pinned <= 1)).all()
    b = bottleneck(trace)
    assert b is not None and b.tier in trace.summary["tiers"]
    times = breakdown(trace)
    assert times.set_index("tier").loc["app", "time"] > 0


def test_fluctuations(trace):
    f = fluctuations(trace)
    app = next(t for t in f["tiers"] if t["tier"] == "app")
    assert app["rate"] > 10 and app["rate_cov_0.1s"] > 0
    assert f["p98"] >= f["p95"] > 0
    assert 0 <= f["bimodality"]["p_value"] <= 1


def test_ramp_step(trace):
    point = _point(trace)
    assert point["throughput"] > 10 and point["p90"] > 0 and point["bottleneck"].startswith(tuple(trace.summary["tiers"]))


@pytest.mark.parametrize("source", SOURCES)
def test_cli_reads_either_trace(folders, source, tmp_path):
    """`size optimize --trace` takes the request mix from the trace; `analyze …` prints."""

    def cli(*args):
        p = subprocess.run([sys.executable, "-m", "tierlab.cli", *map(str, args)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stdout

    folder = folders[source]
    # A committed profile of the TPC-W bookstore (the twin study's: the same 14 types as the
    # trace; the live sizing study's has Totok's eight).
    assert "optimum: M =" in cli("size", "optimize", ROOT / "studies/results/twin_quick/sqlite/profile", "--trace", folder)
    assert "bottleneck" in cli("analyze", "bottleneck", folder) or "closest to it" in cli("analyze", "bottleneck", folder)
    assert "app" in cli("analyze", "fluctuations", folder)
    assert "SRES" in cli("analyze", "profile", folder)
