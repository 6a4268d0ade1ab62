"""Imports of other load tools' results (tests/fixtures/imports, made by the real tools:
see its README) into the trace schema: figures checked against the files read
independently, malformed files named by line, and the analyses on imported runs."""

from __future__ import annotations

import csv
import gzip
import json

import numpy as np
import pytest
from click.testing import CliRunner

from tierlab.cli import cli
from tierlab.errors import InputError
from tierlab.trace import read_trace
from tierlab.trace.imports import hlog, jmeter, k6, locust

from conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "imports"
RAMP_VUS = [1, 2, 4, 6, 8, 10, 14]


def _jtl_rows() -> list[dict]:
    with (FIXTURES / "jmeter_results.jtl").open() as f:
        return list(csv.DictReader(f))


def test_jmeter_csv_holds_every_sample_with_its_label_and_status(tmp_path):
    rows = _jtl_rows()
    t = jmeter.read(FIXTURES / "jmeter_results.jtl")
    ok = [r for r in rows if r["success"] == "true"]
    s = t.summary
    assert s["source"] == "import" and len(t.requests) == len(rows) == 90
    assert s["requests"] == {"ok": len(ok), "rejected": 0, "timeout": 0, "error": len(rows) - len(ok), "unfinished": 0}
    assert s["errors"]["http_4xx"] == len(rows) - len(ok)  # the 404s of "Missing page"
    assert set(s["types"]) == {"Home", "Missing page"} and s["types"]["Missing page"]["requests"]["ok"] == 0
    assert s["response_time"]["mean"] == pytest.approx(np.mean([float(r["elapsed"]) for r in ok]) / 1000)
    assert s["bytes_received"] == sum(int(r["bytes"]) for r in rows)
    first = min(int(r["timeStamp"]) for r in rows)
    assert s["duration"] == pytest.approx(max(int(r["timeStamp"]) + int(r["elapsed"]) - first for r in rows) / 1000)
    t.write(tmp_path / "t")
    assert read_trace(tmp_path / "t").summary == s


def test_the_client_series_integrate_to_the_records():
    """The time-averaged number in flight, summed over the windows, is the requests'
    total time (Σ concurrency × window = Σ response time); completions add up."""
    t = jmeter.read(FIXTURES / "jmeter_results.xml")
    series = {m: t.series("client", m)[0] for m in ("concurrency", "completions", "arrivals", "errors")}
    assert series["concurrency"].sum() * t.summary["window"] == pytest.approx(t.requests.response_time.sum(), rel=1e-9)
    assert series["completions"].sum() == series["arrivals"].sum() == len(t.requests) == 90
    assert series["errors"].sum() == (t.requests.status != "ok").sum() == 45
    little = t.summary["little"]
    assert little["mean_in_system"] == pytest.approx(little["arrival_rate"] * little["mean_time_in_system"], rel=1e-9)


def test_k6_points_are_requests_named_by_their_tag():
    points = [json.loads(x) for x in gzip.open(FIXTURES / "k6_results.json.gz", "rt")]
    durations = [p for p in points if p["type"] == "Point" and p["metric"] == "http_req_duration"]
    t = k6.read(FIXTURES / "k6_results.json.gz")
    s = t.summary
    assert len(t.requests) == len(durations)
    by_name = {n: [p for p in durations if p["data"]["tags"]["name"] == n] for n in ("Home", "Missing page")}
    assert s["types"]["Home"]["requests"]["ok"] == len(by_name["Home"])
    assert s["types"]["Missing page"]["requests"]["error"] == len(by_name["Missing page"]) == s["errors"]["http_4xx"]
    ok_ms = [p["data"]["value"] for p in by_name["Home"]]
    assert s["response_time"]["max"] == pytest.approx(max(ok_ms) / 1000)


def test_locust_aggregates_become_the_summary_and_history_the_series():
    with (FIXTURES / "locust_stats.csv").open() as f:
        stats = {r["Name"]: r for r in csv.DictReader(f)}
    t = locust.read(FIXTURES / "locust")
    s = t.summary
    assert t.requests is None and "requests" in s["missing"]
    total = stats["Aggregated"]
    assert s["requests"]["ok"] + s["requests"]["error"] == int(total["Request Count"])
    assert s["requests"]["error"] == int(total["Failure Count"]) == s["errors"]["http_4xx"]
    assert s["response_time"]["p90"] == pytest.approx(float(total["90%"]) / 1000)
    assert s["types"]["Home"]["response_time"]["p50"] == pytest.approx(float(stats["Home"]["50%"]) / 1000)
    # The history's running total ends at the stats' count.
    assert t.series("client", "completions")[0].sum() == int(total["Request Count"])


def test_hlog_intervals_become_completions_and_the_merged_distribution():
    t = hlog.read(FIXTURES / "run.hlog")
    s = t.summary
    done = t.series("client", "completions")[0]
    assert len(done) == 5 and done.sum() == s["requests"]["ok"] > 0
    rt = s["response_time"]
    assert rt["p50"] <= rt["p90"] <= rt["p99"] <= rt["max"] < 1.0  # microseconds read as such
    assert s["window"] == 1.0 and "failures" in s["missing"]


@pytest.mark.parametrize(
    ("tool", "name", "text", "message"),
    [
        ("jmeter", "r.jtl", "timeStamp,elapsed,label,success\n1000,5,a,true\n1001,x,a,true\n", r"r.jtl line 3: elapsed = 'x'"),
        ("jmeter", "r.jtl", "timeStamp,elapsed,label,success\n1000,5,a,true\n1001,6,a\n", r"r.jtl line 3: 4 fields expected"),
        ("jmeter", "r.jtl", "1000,5,a,true\n", r"r.jtl line 1: no timeStamp, elapsed, label, success"),
        ("jmeter", "r.jtl", "timeStamp,elapsed,label,success\n1000,5,a,maybe\n", r"r.jtl line 2: success = 'maybe'"),
        (
            "jmeter",
            "r.xml",
            '<?xml version="1.0"?>\n<testResults>\n<httpSample t="5" ts="1000" s="true" lb="a"/>\n<httpSample t="5"\n',
            r"r.xml line 4: not well-formed",
        ),
        (
            "jmeter",
            "r.xml",
            '<testResults>\n<httpSample t="5" ts="1000" s="true" lb="a"/>\n<httpSample t="-5" ts="1000" s="true" lb="a"/>\n</testResults>',
            r"r.xml line 3: elapsed = '-5'",
        ),
        ("k6", "r.json", '{"type":"Metric","metric":"x","data":{}}\n{"type":"Point","metric":"http_req_duration",\n', r"r.json line 2: not a JSON object"),
        ("k6", "r.json", '{"type":"Point","metric":"http_req_duration","data":{"value":3}}\n', r"r.json line 1: an http_req_duration point needs data.time"),
        ("k6", "r.json", '{"type":"Metric","metric":"vus","data":{}}\n', r"no http_req_duration points"),
        ("hlog", "r.hlog", "#[Histogram log format version 1.2]\n0.0,1.0,5.0,HISTFAAAAnotbase64\n", r"r.hlog line 2: the histogram does not decode"),
        ("hlog", "r.hlog", "0.0,1.0,HISTFAAAA\n", r"r.hlog line 1: expected `\[Tag=T,\]start,length,max,histogram`"),
    ],
)
def test_malformed_results_name_the_line(tmp_path, tool, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    res = CliRunner().invoke(cli, ["import", tool, str(path), "--out", str(tmp_path / "t")])
    assert res.exit_code != 0
    with pytest.raises(InputError, match=message):
        {"jmeter": jmeter.read, "k6": k6.read, "hlog": hlog.read}[tool](path)


def test_malformed_locust_stats_name_the_line(tmp_path):
    text = (FIXTURES / "locust_stats.csv").read_text().splitlines()
    text[2] = text[2].replace(",72,72,", ",72,lots,", 1)
    (tmp_path / "x_stats.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(InputError, match=r"x_stats.csv line 3: Failure Count = 'lots'"):
        locust.read(tmp_path / "x")
    with pytest.raises(InputError, match=r"nothing_stats.csv not found"):
        locust.read(tmp_path / "nothing")


def _imported_ramp(tmp_path) -> list[str]:
    dirs = []
    for v in RAMP_VUS:
        d = str(tmp_path / f"vus{v}")
        res = CliRunner().invoke(cli, ["import", "k6", str(FIXTURES / "k6_ramp" / f"vus{v}.json.gz"), "--out", d, "--quiet"])
        assert res.exit_code == 0, res.output
        dirs.append(d)
    return dirs


def test_the_knee_over_imported_k6_runs_is_the_servers_capacity(tmp_path):
    """The fixture server does 10 ms of work on one thread and each VU thinks 50 ms:
    it saturates at (10 + 50) / 10 = 6 VUs, and the knee is there."""
    res = CliRunner().invoke(cli, ["analyze", "ramp", *_imported_ramp(tmp_path), "--loads", ",".join(map(str, RAMP_VUS)), "--json", "-"])
    assert res.exit_code == 0, res.output
    result = json.loads(res.stdout)
    assert result["knee"]["load"] == 6
    assert [s["load"] for s in result["steps"]] == RAMP_VUS
    assert result["usl"] is not None and set(result["usl"]) == {"sigma", "kappa", "lambda1", "n_star", "ci"}


def test_fluctuations_of_an_imported_run(tmp_path):
    d = tmp_path / "j"
    assert CliRunner().invoke(cli, ["import", "jmeter", str(FIXTURES / "jmeter_results.jtl"), "--out", str(d), "--quiet"]).exit_code == 0
    res = CliRunner().invoke(cli, ["analyze", "fluctuations", str(d), "--json", "-"])
    assert res.exit_code == 0, res.output
    f = json.loads(res.stdout)
    assert f["tiers"] == [] and f["bimodality"]["dip"] > 0
    # JMeter does not see the TCP handshake: not measured, rather than none.
    assert f["share_retransmitted"] is None and f["retransmissions_per_minute"] is None
    assert "not measured" in f["retransmissions_not_measured"]
    shown = CliRunner().invoke(cli, ["analyze", "fluctuations", str(d)])
    assert "retransmissions not measured: the tool does not report the TCP handshake" in " ".join(shown.output.split())
