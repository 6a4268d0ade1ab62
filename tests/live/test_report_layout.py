"""`tierlab report` as a reader sees it, measured in a real headless Chromium: a script
added to the page reads each drawn figure (its x axis's range and title, its traces'
extent and size, the boxes of its texts) once plotly has drawn it. Every time axis of a
run spans 0 to the end of the run, the data within it (the 10 s series too); a 100 ms
series of a long run is drawn as a smoothed line over a band, not thousands of points;
no text of a figure lies on another (legend, axis titles, tick labels); the
histogram's axis reads in ms; the tables' numbers are rounded; the bottleneck's
sentence gives the level the plot beside it draws."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import tierlab
from tierlab.report.html import ENVELOPE_ABOVE, report, write
from tierlab.trace.imports import jmeter, k6

from conftest import EXAMPLES, ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium; .ci/run installs it)")
FIXTURES = ROOT / "tests" / "fixtures" / "imports"
RAMP_VUS = [1, 2, 4, 6, 8, 10, 14]

# Run in the page after plotly has drawn: one record per figure, written into the DOM
# that --dump-dom prints.
MEASURE = """
<script>
window.addEventListener("load", () => setTimeout(() => {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const figures = [...document.querySelectorAll(".js-plotly-plot")].map((gd) => {
    const xa = gd._fullLayout.xaxis;
    const xs = gd._fullData.filter((t) => t.type !== "histogram").flatMap((t) => [...(t.x || [])].filter((x) => typeof x === "number"));
    const texts = [...gd.querySelectorAll(".legendtext, .xtitle, .ytitle, .y2title, .xtick text, .ytick text, .y2tick text, .annotation-text")]
      .filter((e) => e.textContent.trim() && e.getBoundingClientRect().width > 0)
      .map((e) => ({ text: e.textContent, box: box(e) }));
    return {
      section: gd.closest("section").id,
      xtitle: xa.title && xa.title.text,
      xrange: xa.range,
      xmin: Math.min(...xs), xmax: Math.max(...xs),
      points: gd._fullData.map((t) => (t.x || []).length),
      names: gd._fullData.map((t) => t.name),
      ticks: [...gd.querySelectorAll(".xtick text")].map((e) => e.textContent),
      texts,
    };
  });
  const out = document.createElement("pre");
  out.id = "layout-check";
  out.textContent = JSON.stringify(figures);
  document.body.appendChild(out);
}, 1500));
</script>
"""


def _measure(page: Path, tmp: Path) -> list[dict]:
    measured = page.with_name(page.stem + "-measured.html")
    measured.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--window-size=1200,900"]
    dom = subprocess.run(
        [CHROMIUM, *flags, f"--user-data-dir={tmp / 'profile'}", "--virtual-time-budget=20000", "--dump-dom", measured.as_uri()],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stderr[-2000:]
    return json.loads(html.unescape(found.group(1)))


def _overlaps(texts: list[dict]) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap by more than a pixel each way."""
    found = []
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            (l1, t1, r1, b1), (l2, t2, r2, b2) = a["box"], b["box"]
            if min(r1, r2) - max(l1, l2) > 1 and min(b1, b2) - max(t1, t2) > 1:
                found.append((a["text"], b["text"]))
    return found


def _visible_text(page: Path) -> str:
    return re.sub(r"<script.*?</script>", "", page.read_text(), flags=re.S)


def _check_every_figure(figures: list[dict], end: float) -> None:
    for f in figures:
        assert not _overlaps(f["texts"]), (f["section"], _overlaps(f["texts"]))
        if f["xtitle"] == "time (s)":
            # The same origin and end for every time axis of the run, the data within.
            assert f["xrange"] == pytest.approx([0, end]), f["section"]
            assert 0 <= f["xmin"] and f["xmax"] <= end + 1e-9, f["section"]


@pytest.fixture(scope="module")
def long_run(tmp_path_factory) -> tuple[Path, tierlab.Trace]:
    """90 s of the TPC-W example: 900 windows of 100 ms, more than a line draws legibly."""
    trace = tierlab.simulate(tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_run(duration=90, warmup=10))
    return write(report([("sim", trace)]), tmp_path_factory.mktemp("long") / "long.html"), trace


def test_a_long_run_is_drawn_legibly_on_one_time_axis(long_run, tmp_path):
    page, trace = long_run
    figures = _measure(page, tmp_path)
    _check_every_figure(figures, trace.end)
    timed = {f["section"]: f for f in figures if f["xtitle"] == "time (s)"}
    assert set(timed) == {"response-time", "pools", "stations", "bottleneck"}
    for f in timed.values():
        assert max(f["points"]) <= ENVELOPE_ABOVE, f["section"]  # buckets, not every window
    assert "bands: the lowest to the highest of its 0.1 s windows" in page.read_text()
    hist = next(f for f in figures if f["section"] == "fluctuations")
    assert any(t.endswith(" ms") for t in hist["ticks"]), hist["ticks"]
    text = _visible_text(page)
    assert not re.search(r"\d\.\d{5,}", text), re.findall(r"[\d.]*\d\.\d{5,}", text)[:5]
    # The sentence's level is the dashed line beside it.
    level = re.search(r"mean (?:utilization|occupancy) (\d+)%", text)
    assert level and f"mean over the measured period ({level.group(1)}%)" in timed["bottleneck"]["names"]


def test_a_short_run_ends_its_10_s_series_where_its_data_end(tmp_path):
    trace = tierlab.simulate(tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_run(duration=20, warmup=5))
    figures = _measure(write(report([("sim", trace)]), tmp_path / "short.html"), tmp_path)
    _check_every_figure(figures, trace.end)
    rt = next(f for f in figures if f["section"] == "response-time")
    assert rt["xmax"] <= 20 and rt["xmin"] >= 5  # response times after the warm-up


@pytest.mark.parametrize("kind", ["jmeter", "ramp"])
def test_imported_runs_and_a_ramp(tmp_path, kind):
    if kind == "jmeter":
        runs = [("jmeter", jmeter.read(FIXTURES / "jmeter_results.jtl"))]
    else:
        runs = [(f"{v} VUs", k6.read(FIXTURES / "k6_ramp" / f"vus{v}.json.gz")) for v in RAMP_VUS]
    page = write(report(runs, loads=RAMP_VUS if kind == "ramp" else None), tmp_path / f"{kind}.html")
    figures = _measure(page, tmp_path)
    for k, (_, trace) in enumerate(runs, 1):
        prefix = "" if len(runs) == 1 else f"run{k}-"
        _check_every_figure([f for f in figures if f["section"].startswith(prefix) or f["section"] == "ramp"], trace.end)
