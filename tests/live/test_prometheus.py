"""Prometheus metrics: the live server's `/metrics` on its admin port, scraped during a
run in the Prometheus text format (parsed by prometheus_client's own parser), agrees
with the server's JSON state; tierlab's own client still gets JSON. The load
generator's progress, served on its own port during a run."""

from __future__ import annotations

import threading
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

from tierlab.live import generate_load, loadgen
from tierlab.live.lifecycle import free_ports
from tierlab.live.loadgen_metrics import _Progress

from conftest import HTTP, live_model, running_testbed

PROMETHEUS_ACCEPT = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"  # what Prometheus sends


def _scrape(bed, accept: str = PROMETHEUS_ACCEPT, token: str | None = None) -> tuple[str, str]:
    token = token if token is not None else (Path(bed.state.workdir) / "token").read_text().strip()
    req = urllib.request.Request(f"http://127.0.0.1:{bed.state.admin_port}/metrics", headers={"Authorization": f"Bearer {token}", "Accept": accept})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read().decode(), r.headers["Content-Type"]


def _families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_metrics_scraped_during_a_live_run(tmp_path):
    with running_testbed("sqlite", tmp_path / "live") as bed:
        model = live_model(**{"run.duration": 6, "run.warmup": 1})
        done = threading.Event()
        result: dict = {}

        def run() -> None:
            try:
                result["trace"] = bed.run(model, HTTP)
            finally:
                done.set()

        threading.Thread(target=run, daemon=True).start()
        during = []
        while not done.wait(0.5):
            during.append(_scrape(bed, "text/plain;version=0.0.4"))
        assert result.get("trace") is not None
        openmetrics, content_type = _scrape(bed)
        text, _ = _scrape(bed, "text/plain;version=0.0.4")
        state = bed.admin.metrics()

    # What Prometheus asks for first: OpenMetrics, which its own parser reads.
    assert content_type.startswith("application/openmetrics-text")
    assert {f.name for f in openmetrics_families(openmetrics)} >= {"tierlab_response_seconds", "tierlab_requests", "tierlab_pool_busy"}
    # Scrapes during the run: the counts grew while the load ran.
    finished = [sum(s.value for s in _families(t)["tierlab_requests"].samples) for t, _ in during]
    assert len(finished) >= 4 and finished[-1] > finished[0]
    f = _families(text)
    # Every finished request is in one histogram series (type, status); counts agree.
    counts = {(s.labels["type"], s.labels["status"]): s.value for s in f["tierlab_response_seconds"].samples if s.name.endswith("_count")}
    assert sum(counts.values()) == sum(state["requests"].values())
    assert sum(v for (_, status), v in counts.items() if status == "ok") == state["requests"]["ok"]
    assert {t for t, _ in counts} <= set(result["trace"].summary["types"]) | {"/"}
    requests = {s.labels["status"]: s.value for s in f["tierlab_requests"].samples if s.name == "tierlab_requests_total"}
    assert requests == {k: float(v) for k, v in state["requests"].items()}
    # The pools, as configured from the model, and their counters.
    sizes = {s.labels["pool"]: s.value for s in f["tierlab_pool_size"].samples}
    assert sizes == {"threads": 10, "connections": 5}
    acquired = {s.labels["pool"]: s.value for s in f["tierlab_pool_acquired"].samples if s.name.endswith("_total")}
    assert acquired["threads"] == state["pools"]["threads"]["acquired"] > 0
    assert {s.labels["pool"] for s in f["tierlab_pool_rejected"].samples} == {"threads", "connections"}


def test_json_for_tierlab_and_a_token_for_everyone(tmp_path):
    with running_testbed("sqlite", tmp_path / "live") as bed:
        text, content_type = _scrape(bed, accept="application/json")
        assert content_type == "application/json" and '"pools"' in text
        with pytest.raises(urllib.error.HTTPError, match="401"):
            _scrape(bed, token="wrong")


def _loadgen_histograms(families: dict) -> dict[str, tuple[list[float], float]]:
    """Per type: the cumulative bucket counts in bound order, and the count."""
    out: dict[str, tuple[list[float], float]] = {}
    for s in families["tierlab_loadgen_response_time_seconds"].samples:
        buckets, count = out.get(s.labels["type"], ([], 0.0))
        if s.name.endswith("_bucket"):
            buckets.append(s.value)
        elif s.name.endswith("_count"):
            count = s.value
        out[s.labels["type"]] = (buckets, count)
    return out


def test_the_load_generator_serves_its_progress_during_a_run(tmp_path):
    (port,) = free_ports(1)
    url = f"http://127.0.0.1:{port}/metrics"
    with running_testbed("sqlite", tmp_path / "live") as bed:
        done = threading.Event()
        result: dict = {}

        def run() -> None:
            try:
                model = live_model(**{"run.duration": 5, "run.warmup": 1})
                result["trace"] = generate_load(model, HTTP, target=bed.state.target, metrics_port=port)
            finally:
                done.set()

        threading.Thread(target=run, daemon=True).start()
        seen = []
        histograms = []
        while not done.wait(0.4):
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    f = _families(r.read().decode())
            except OSError:  # not listening yet, or already closed
                continue
            seen.append((f["tierlab_loadgen_run_fraction"].samples[0].value, f["tierlab_loadgen_requests_finished"].samples[0].value))
            histograms.append(_loadgen_histograms(f))
    assert "trace" in result
    assert len(seen) >= 4
    fractions, finished = zip(*seen)
    assert list(fractions) == sorted(fractions) and 0 < fractions[-1] <= 1
    assert list(finished) == sorted(finished) and finished[-1] > 0
    # The response-time histogram per type: one series per type of the trace; its
    # buckets are cumulative, +Inf is the count, and the counts (taken just before the
    # finished counter, warm-up included in both) add up to at most that counter.
    assert set(histograms[-1]) == set(result["trace"].summary["types"])
    for h, done_so_far in zip(histograms, finished, strict=True):
        for buckets, count in h.values():
            assert buckets == sorted(buckets) and buckets[-1] == count
        assert sum(count for _, count in h.values()) <= done_so_far
    totals = [sum(count for _, count in h.values()) for h in histograms]
    assert totals == sorted(totals) and totals[-1] > 0
    with pytest.raises(OSError):  # the port is closed with the run
        urllib.request.urlopen(url, timeout=2)


def test_the_load_generators_last_histogram_counts_the_traces_requests(tmp_path, monkeypatch):
    """After the run, the histogram (what a scrape at the end would read) counts per type
    exactly the trace's requests: with no warm-up, both hold every finished request."""
    latest = []
    serving = loadgen.serving

    @contextmanager
    def keeping(*args):
        with serving(*args) as (tick, latency):
            latest.append(latency.__self__)
            yield tick, latency

    monkeypatch.setattr(loadgen, "serving", keeping)
    (port,) = free_ports(1)
    with running_testbed("sqlite", tmp_path / "live") as bed:
        trace = generate_load(live_model(**{"run.duration": 3, "run.warmup": 0}), HTTP, target=bed.state.target, metrics_port=port)
    histograms = _loadgen_histograms({m.name: m for m in latest[0].collect()})
    counts = {name: float(sum(t["requests"].values()) - t["requests"]["unfinished"]) for name, t in trace.summary["types"].items()}
    assert {name: count for name, (_, count) in histograms.items() if count} == {name: c for name, c in counts.items() if c}
    assert sum(counts.values()) > 0


def test_a_scrape_between_a_reports_two_calls_sees_the_last_whole_report():
    """The generator hands a report over in two calls, the histogram then the counters;
    a scrape in between reads the previous report whole (a histogram counting more
    requests than `finished` failed `test_the_load_generator_serves_...` on a busy CI)."""
    p = _Progress(["a"])
    one = [0] * (len(p.bounds) - 1)
    p.latency([[1, *one]], [0.1])
    p(0.5, 1, 0, 1)
    p.latency([[3, *one]], [0.3])  # the next report: its counters not handed over yet
    f = {m.name: m for m in p.collect()}
    finished = f["tierlab_loadgen_requests_finished"].samples[0].value
    (count,) = (s.value for s in f["tierlab_loadgen_response_time_seconds"].samples if s.name.endswith("_count"))
    assert (finished, count) == (1, 1)
    p(0.6, 3, 0, 3)
    f = {m.name: m for m in p.collect()}
    assert f["tierlab_loadgen_requests_finished"].samples[0].value == 3
