"""From a server's OpenTelemetry to a prediction in three commands (issue 40): `tierlab
import otel`, `tierlab twin calibrate` without a model, `tierlab simulate TWIN --set …`;
and `tierlab report` and the analyses on the imported trace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "otel" / "python_bookstore.otlp.jsonl.gz"


def tierlab(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlab.cli", *map(str, args)], capture_output=True, text=True)


def test_import_calibrate_predict(tmp_path):
    trace, twin = tmp_path / "trace", tmp_path / "twin.yaml"
    r = tierlab("import", "otel", FIXTURE, "--out", trace, "--window", "0.1", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "not in the trace: app.wait_thread" in r.stderr  # what the telemetry cannot show is said
    for analysis in ("profile", "bottleneck", "fluctuations"):
        a = tierlab("analyze", analysis, trace)
        assert a.returncode == 0, (analysis, a.stderr)
        assert "nan" not in a.stdout.lower()
    report = tierlab("report", trace, "--out", tmp_path / "report.html")
    assert report.returncode == 0, report.stderr

    lacking = tierlab("twin", "calibrate", trace, "--out", twin)
    assert lacking.returncode != 0 and "give it with --threads" in lacking.stderr  # no thread-pool metric: the server's M is asked for
    r = tierlab("twin", "calibrate", trace, "--threads", "4", "--out", twin)
    assert r.returncode == 0, r.stderr
    assert "nan" not in r.stdout.lower()
    model = yaml.safe_load(twin.read_text())
    imported = json.loads((trace / "summary.json").read_text())
    assert set(model["requests"]) == {t for t, v in imported["types"].items() if v["requests"]["ok"]}
    assert model["tiers"]["app"]["pools"]["threads"]["size"] == 4 and model["tiers"]["app"]["pools"]["db"]["size"] == 2  # from the pool's metrics
    search = model["requests"]["/execute_search"]["app"]
    assert next(s["loop"]["count"] for s in search if "loop" in s) == 101  # the page's statements, each an access
    assert model["workload"]["population"]["session_rate"] > 0
    report = json.loads(twin.with_suffix(".calibration.json").read_text())
    assert any("apportioned" in n for n in report["notes"])

    predicted = tmp_path / "predicted"
    r = tierlab("simulate", twin, "--out", predicted, "--duration", "10", "--warmup", "1", "--set", "tiers.app.pools.threads.size=8", "--quiet")
    assert r.returncode == 0, r.stderr
    s = json.loads((predicted / "summary.json").read_text())
    assert s["tiers"]["app"]["servers"][0]["pools"]["threads"]["size"] == 8 and s["requests"]["ok"] > 0


def test_calibrate_without_model_refuses_other_traces(tmp_path):
    from conftest import EXAMPLES

    sim = tmp_path / "sim"
    assert tierlab("simulate", EXAMPLES / "tpcw_2tier.yaml", "--out", sim, "--duration", "10", "--warmup", "1", "--quiet").returncode == 0
    r = tierlab("twin", "calibrate", sim, "--out", tmp_path / "twin.yaml")
    assert r.returncode != 0 and "without --model, give traces imported from a server's OpenTelemetry" in r.stderr
