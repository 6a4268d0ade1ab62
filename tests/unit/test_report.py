"""`tierlab report`: the sections each kind of trace has data for, A/B deltas, the
ramp's knee over imported runs, the sizing heat map, a self-contained page (the live
run's sections and the page in a browser: tests/live/test_report_browser.py)."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from plotly.offline import get_plotlyjs

import tierlab
from tierlab.cli import cli
from tierlab.report.html import report
from tierlab.report.numbers import figure
from tierlab.trace.imports import jmeter, k6, locust

from conftest import EXAMPLES, ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "imports"
# `tierlab size optimize` and `size validate --json` outputs of one profile (fixtures of
# the report's sizing section, kept as written, not study results).
SIZING = ROOT / "tests" / "fixtures" / "sizing" / "optimize"
MEASURED = ROOT / "tests" / "fixtures" / "sizing" / "validate.json"
LIVE_VALIDATION = ROOT / "studies" / "results" / "live_sizing" / "validation.csv"  # with its own predicted column
RAMP_VUS = [1, 2, 4, 6, 8, 10, 14]
ONE_RUN = ["headline", "response-time", "types", "breakdown", "pools", "stations", "bottleneck", "fluctuations"]


@pytest.fixture(scope="module")
def simulated() -> tierlab.Trace:
    model = tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_run(duration=40, warmup=10)
    return tierlab.simulate(model)


def _k6_ramp() -> list[tuple[str, tierlab.Trace]]:
    return [(f"{v} VUs", k6.read(FIXTURES / "k6_ramp" / f"vus{v}.json.gz")) for v in RAMP_VUS]


def test_a_simulated_run_has_every_single_run_section(simulated):
    assert report([("sim", simulated)]).sections == ONE_RUN


def test_imported_runs_have_the_sections_their_tool_measured():
    jm = report([("jmeter", jmeter.read(FIXTURES / "jmeter_results.xml"))]).sections
    assert jm == ["headline", "response-time", "types", "fluctuations", "missing"]
    lc = report([("locust", locust.read(FIXTURES / "locust"))]).sections
    assert lc == ["headline", "response-time", "types", "missing"]  # no records: no fluctuations


def test_the_page_is_self_contained(simulated):
    page = report([("sim", simulated)]).html
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)
    assert page.count(get_plotlyjs()[:500]) == 1  # the library once, however many figures


def test_two_runs_side_by_side_with_deltas():
    a = jmeter.read(FIXTURES / "jmeter_results.jtl")
    b = jmeter.read(FIXTURES / "jmeter_results.xml")
    rep = report([("A", a), ("B", b)])
    assert rep.sections[0] == "comparison" and "ramp" not in rep.sections
    assert "run1-headline" in rep.sections and "run2-fluctuations" in rep.sections
    d = b.summary["throughput"] - a.summary["throughput"]
    assert f"{'+' if d >= 0 else '-'}{figure(abs(d))} ({d / a.summary['throughput']:+.1%})" in rep.html


def test_a_ramp_of_imported_runs_marks_the_knee():
    rep = report(_k6_ramp(), loads=RAMP_VUS)
    assert rep.sections[:2] == ["comparison", "ramp"]
    assert "knee (capacity): load 6," in rep.html


def test_the_sizing_folder_adds_the_heat_map_with_the_optimum(simulated):
    rep = report([("sim", simulated)], sizing=SIZING)
    assert rep.sections[0] == "sizing" and "optimum: M = 15, N = 5" in rep.html


def test_predicted_vs_measured_sizing():
    import pandas as pd

    rep = report([("sim", jmeter.read(FIXTURES / "jmeter_results.jtl"))], validation=LIVE_VALIDATION)
    assert rep.sections[0] == "validation"
    errors = pd.read_csv(LIVE_VALIDATION).error
    assert (
        f"mean absolute error {errors.abs().mean():.1%} over {errors.notna().sum()} configurations" in rep.html
    )  # M0 + 1, + 2 lie past the profiled M: no prediction
    both = report([("sim", jmeter.read(FIXTURES / "jmeter_results.jtl"))], sizing=SIZING, validation=MEASURED)
    assert both.sections[:2] == ["sizing", "validation"]


def test_report_command(tmp_path, simulated):
    simulated.write(tmp_path / "sim")
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "sim"), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert 'id="bottleneck"' in (tmp_path / "r.html").read_text()
