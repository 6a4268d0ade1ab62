"""The command line run as a user runs it, in a process of its own: what loads at start,
progress in a log, tables whole when piped, wrong options named (the commands'
options in-process: tests/unit/test_cli.py)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

import tierlab

from conftest import EXAMPLES

HEAVY = ["pandas", "pyarrow", "numpy", "pydantic", "scipy", "matplotlib", "plotly"]


def _loaded_by(code: str) -> list[str]:
    check = f"{code}\nimport sys\nprint('loaded:', *(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[-1].split()[1:]


@pytest.mark.parametrize("code", ["import tierlab", "from tierlab.cli import cli; cli.main(['--help'], standalone_mode=False)"])
def test_importing_tierlab_and_help_load_no_heavy_library(code):
    # `import tierlab` and `tierlab --help` stay fast: pandas, numpy, pydantic and the
    # plotting libraries load only when a command uses them.
    loaded = _loaded_by(code)
    assert loaded == [], f"{code!r} imported {loaded}"


def test_a_simulation_writes_its_trace_without_pandas(tmp_path):
    # pandas takes longer to import than a small run's engine call: `tierlab simulate`
    # writes the engine's columns to Parquet through pyarrow alone, and the frames are
    # made when an analysis reads them — the same frames, NaN and labels included.
    model = EXAMPLES / "tpcw_2tier.yaml"
    args = ["simulate", str(model), "--out", str(tmp_path), "--duration", "60", "--warmup", "10", "--quiet"]
    loaded = _loaded_by(f"from tierlab.cli import cli; cli.main({args!r}, standalone_mode=False)")
    assert "pandas" not in loaded and "pyarrow" in loaded
    trace, written = tierlab.simulate(model, duration=60, warmup=10), tierlab.read_trace(tmp_path)
    assert trace.requests is not None and trace.timeseries.value.isna().any()
    pd.testing.assert_frame_equal(written.timeseries, trace.timeseries)
    pd.testing.assert_frame_equal(written.requests, trace.requests)


def cli_run(*args: str) -> subprocess.CompletedProcess:
    """`tierlab ARGS` with stdout and stderr piped, as in a log."""
    return subprocess.run([sys.executable, "-m", "tierlab.cli", *args], capture_output=True, text=True)


def test_sweeps_and_runs_say_what_they_do_in_a_log(tmp_path):
    # stderr is a pipe here: one line per run of the ramp; --duration/--warmup shorten
    # every run (180 s measured: ok = throughput × 180). Not much shorter: in 50 s the
    # p90 of the 10 s think times' sessions need not grow with the load.
    r = cli_run("ramp", str(EXAMPLES / "tpcw_2tier.yaml"), "--loads", "1,2,3", "--workers", "1", "--duration", "200", "--warmup", "20", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert [line.split(" (")[0] for line in r.stderr.splitlines() if line.startswith("ramp:")] == ["ramp: 1/3", "ramp: 2/3", "ramp: 3/3"]
    import pandas as pd

    table = pd.read_csv(tmp_path / "ramp.csv")
    assert (table.ok == (table.throughput * 180).round()).all()
    r = cli_run("simulate", str(EXAMPLES / "tpcw_2tier.yaml"), "--out", str(tmp_path / "t"), "--duration", "30", "--warmup", "5")
    assert r.returncode == 0 and "simulating tpcw-2tier: (100%)" in r.stderr


def test_piped_tables_are_whole_and_a_cluster_shows_its_dispatch(tmp_path):
    r = cli_run("simulate", str(EXAMPLES / "tpcw_cluster.yaml"), "--out", str(tmp_path), "--duration", "20", "--warmup", "5")
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout and "dispatch (measured period)" in r.stdout
    rows = {line.split("│")[1].strip(): line for line in r.stdout.splitlines() if line.startswith("│ web ") or line.startswith("│ app ")}
    assert "sessions created" in r.stdout and {"web", "app"} <= rows.keys()
    created = tierlab.read_trace(tmp_path).summary["tiers"]["app"]["dispatch"]["sessions_created"]
    assert created > 0 and f" {created} " in r.stdout


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trace")
    tierlab.simulate(EXAMPLES / "tpcw_2tier.yaml", duration=60, warmup=10).write(folder)
    return folder


@pytest.mark.parametrize(
    "args, column",
    [
        (["analyze", "profile", "{trace}"], "wait_db"),
        (["analyze", "bottleneck", "{trace}"], "resource"),
        (["analyze", "fluctuations", "{trace}"], "rate_cov_0.1s"),
        (["cost", "fit", str(EXAMPLES / "chen_gorton_stockonline.csv")], "threads"),
    ],
)
def test_tables_for_machines_on_stdout(trace_dir, args, column):
    import io
    import json

    import pandas as pd

    args = [a.replace("{trace}", str(trace_dir)) for a in args]
    r = cli_run(*args, "--csv", "-")
    assert r.returncode == 0, r.stderr
    table = pd.read_csv(io.StringIO(r.stdout))  # nothing but the CSV on stdout
    assert column in table.columns and len(table) > 0
    r = cli_run(*args, "--json", "-")
    assert r.returncode == 0 and isinstance(json.loads(r.stdout), dict)
    r = cli_run(*args, "--json", "-", "--csv", "-")
    assert r.returncode == 2 and "cannot share stdout" in r.stderr


@pytest.mark.parametrize(
    "option, value, says", [("--loads", "1,x", "comma-separated numbers, got '1,x'"), ("--loads", "1,nan", "numbers"), ("--seeds", "1.5", "whole numbers")]
)
def test_a_wrong_list_option_is_a_clear_error(option, value, says):
    r = cli_run("ramp", str(EXAMPLES / "tpcw_2tier.yaml"), option, value)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "args, says",
    [
        (["ramp", "{m}", "--seeds", ""], "expected comma-separated whole numbers"),
        (["ramp", "{m}", "--workers", "0"], "Invalid value for '--workers'"),
        (["size", "validate", "{m}", "--config", "15,5", "--start", "3", "--step", "0"], "Invalid value for '--step'"),
        (["size", "validate", "{m}", "--config", "15,5", "--start", "3", "--runs", "0"], "Invalid value for '--runs'"),
        (["cost", "simulate", "{m}", "--clients", "10", "--threads", "1", "--pool", "nodot", "--out", "t.csv"], "--pool nodot: not a threads pool"),
    ],
)
def test_a_wrong_option_value_is_a_clear_error(args, says):
    r = cli_run(*(a.replace("{m}", str(EXAMPLES / "tpcw_2tier.yaml")) for a in args))
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr and "TIERLAB_DEBUG" not in r.stderr
