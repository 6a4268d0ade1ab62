"""`tierlab report` on a live run: its sections — and every kind of report opened in a real headless Chromium: no console message, every expected section
in the rendered DOM with its figures drawn, a screenshot kept."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import tierlab
from tierlab.report.html import report, write
from tierlab.trace.imports import jmeter, k6, locust

from conftest import EXAMPLES, HTTP, ROOT, live_model, running_testbed

FIXTURES = ROOT / "tests" / "fixtures" / "imports"
# `tierlab size optimize` and `size validate --json` outputs of one profile (fixtures of
# the report's sizing section, kept as written, not study results).
SIZING = ROOT / "tests" / "fixtures" / "sizing" / "optimize"
MEASURED = ROOT / "tests" / "fixtures" / "sizing" / "validate.json"
RAMP_VUS = [1, 2, 4, 6, 8, 10, 14]
ONE_RUN = ["headline", "response-time", "types", "breakdown", "pools", "stations", "bottleneck", "fluctuations"]


@pytest.fixture(scope="module")
def simulated() -> tierlab.Trace:
    model = tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_run(duration=40, warmup=10)
    return tierlab.simulate(model)


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> tierlab.Trace:
    """A short run on the live testbed: client view, the server's pools and phases,
    the monitor's CPU."""
    with running_testbed("sqlite", tmp_path_factory.mktemp("live") / "live") as bed:
        return bed.run(live_model(**{"run.duration": 6, "run.warmup": 1}), HTTP)


def test_a_live_run_has_every_single_run_section(live):
    assert report([("live", live)]).sections == ONE_RUN


def _k6_ramp() -> list[tuple[str, tierlab.Trace]]:
    return [(f"{v} VUs", k6.read(FIXTURES / "k6_ramp" / f"vus{v}.json.gz")) for v in RAMP_VUS]


# -- in a browser ---------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=10000",
]


def _chromium(page: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()], capture_output=True, text=True, timeout=300, check=False)


def _open(page: Path, tmp: Path, sections: list[str]) -> None:
    """Render `page`: no console message at all (an error, an uncaught exception or a
    warning would show as one), every section and its figures in the DOM, a screenshot
    and a printed PDF."""
    dom = _chromium(page, tmp, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, console
    for s in sections:
        assert f'<section id="{s}">' in dom.stdout, s
    figures = page.read_text().count("Plotly.newPlot(")
    assert figures > 0 and dom.stdout.count('class="main-svg"') >= figures  # plotly drew every figure
    shot = tmp / f"{page.stem}.png"
    assert _chromium(page, tmp, "--window-size=1200,4000", f"--screenshot={shot}").returncode == 0
    assert shot.stat().st_size > 10_000
    pdf = tmp / f"{page.stem}.pdf"  # printable: Chromium's print to PDF of the whole page
    assert _chromium(page, tmp, f"--print-to-pdf={pdf}", "--no-pdf-header-footer").returncode == 0
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 10_000


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium; .ci/run installs it)")
@pytest.mark.parametrize("kind", ["simulated", "live", "jmeter", "locust", "ab", "ramp"])
def test_the_report_renders_in_chromium(tmp_path, request, kind):
    runs = {
        "simulated": lambda: [("sim", request.getfixturevalue("simulated"))],
        "live": lambda: [("live", request.getfixturevalue("live"))],
        "jmeter": lambda: [("jmeter", jmeter.read(FIXTURES / "jmeter_results.jtl"))],
        "locust": lambda: [("locust", locust.read(FIXTURES / "locust"))],
        "ab": lambda: [("A", jmeter.read(FIXTURES / "jmeter_results.jtl")), ("B", jmeter.read(FIXTURES / "jmeter_results.xml"))],
        "ramp": _k6_ramp,
    }[kind]()
    sized = kind == "simulated"
    rep = report(runs, loads=RAMP_VUS if kind == "ramp" else None, sizing=SIZING if sized else None, validation=MEASURED if sized else None)
    page = write(rep, tmp_path / f"{kind}.html")
    _open(page, tmp_path, rep.sections)
