"""Pool sizing and the cost model as a user runs them: `tierlab size …` and `cost fit`
in a subprocess, and the sweep runner in worker processes and on a local Dask cluster
(the formulas themselves: tests/unit/test_pool_sizing.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from tierlab.experiments.sizing import PoolSizing, ProfileGrid
from tierlab.run import Run, sweep

from conftest import EXAMPLES, connection_bound_model, one_pool_model, throughput

# ---- Chen & Gorton ----------------------------------------------------------------------


def test_cli_cost_fit_and_bad_table(tmp_path):
    import subprocess
    import sys

    ok = subprocess.run(
        [sys.executable, "-m", "tierlab.cli", "cost", "fit", str(EXAMPLES / "chen_gorton_stockonline.csv"), "--json", str(tmp_path / "fit.json")],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    import json

    assert json.loads((tmp_path / "fit.json").read_text())["optimal_threads"] == {"100": 10, "200": 14, "400": 20, "800": 29}
    (tmp_path / "bad.csv").write_text("clients,threads,value\n100,1,x\n")
    bad = subprocess.run([sys.executable, "-m", "tierlab.cli", "cost", "fit", str(tmp_path / "bad.csv")], capture_output=True, text=True)
    assert bad.returncode == 2 and "line 2: value = 'x'" in bad.stderr and "Traceback" not in bad.stderr


def test_cli_size_profile_optimize_validate(tmp_path):
    """The three `tierlab size` steps on a small two-pool model, end to end."""
    import subprocess
    import sys

    import yaml

    model = {
        "run": {"duration": 400, "warmup": 50, "seed": 3},
        "tiers": {
            "app": {
                "pools": {
                    "threads": {"kind": "threads", "size": 4, "timeout": 5},
                    "db": {"kind": "connections", "size": 2, "timeout": 5, "caching": "request"},
                },
                "stations": {"cpu": {"kind": "cpu", "cores": 1, "overhead": 0.01}},
            },
            "db": {"stations": {"cpu": {"kind": "cpu", "cores": 1}}},
        },
        "requests": {
            "A": {
                "app": [
                    {"acquire": "threads"},
                    {"cpu": {"exponential": 0.01}},
                    {"loop": {"count": 3, "steps": [{"use": {"pool": "db", "steps": [{"delay": 0.002}, {"call": "db"}]}}]}},
                    {"release": "threads"},
                ],
                "db": [{"cpu": {"exponential": 0.002}}],
            }
        },
        "workload": {
            "population": {"session_rate": 5},
            "think": {"exponential": 1},
            "session_end": {"after_requests": 5},
            "chain": {"matrix": {"A": {"A": 1}}, "start": "A"},
        },
    }
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(model))

    def cli(*args):
        p = subprocess.run([sys.executable, "-m", "tierlab.cli", *map(str, args)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stdout

    cli("size", "profile", path, "--out", tmp_path / "prof", "--threads", "2,4,8", "--connections", "1,2,4", "--workers", "1")
    assert {"points.csv", "runs.csv", "profile.json"} <= {f.name for f in (tmp_path / "prof").iterdir()}
    cli("size", "optimize", tmp_path / "prof", "--rate", "20", "--out", tmp_path / "opt")
    import json

    best = json.loads((tmp_path / "opt" / "result.json").read_text())
    M, N, lam = best["optimum"]["M"], best["optimum"]["N"], best["optimum"]["lambda"]
    # The command reports the library's optimum for the profile it wrote, and at a
    # profiled point λ is the paper's formula over the written points, by hand:
    # min(N / ΣV_i·q_i, M / ΣV_i·(p_i + q_i)) with V_i = share_i · L.
    grid = ProfileGrid.read(tmp_path / "prof")
    rates = PoolSizing(grid).rates()
    assert (M, N, lam) == (int(rates.best()["M"]), int(rates.best()["N"]), pytest.approx(float(rates.best()["lambda"]), rel=1e-12))
    pts = pd.read_csv(tmp_path / "prof" / "points.csv").query("M == 4 and N == 2").set_index("type")
    V = grid.share * grid.L
    sum_q, sum_pq = (V * pts["q"]).sum(), (V * (pts["p"] + pts["q"])).sum()
    assert rates.table.set_index(["M", "N"]).loc[(4, 2), "lambda"] == pytest.approx(min(2 / sum_q, 4 / sum_pq), rel=1e-9)
    assert best["servers"]["servers"] == -(-20 // lam)  # ⌈rate / λ⌉
    cli("size", "validate", path, "--config", f"{M},{N}", "--start", round(lam, 2), "--runs", "2", "--workers", "1", "--json", tmp_path / "v.json")
    measured = json.loads((tmp_path / "v.json").read_text())
    assert measured["result"][0]["lambda_max"] > 0 and len(measured["trials"]) >= 2


def test_cli_size_optimize_twin(tmp_path):
    """`size optimize --method twin` on a model: its optimum and λ_max per configuration;
    the paper's options are refused by name."""
    import json
    import subprocess
    import sys

    import yaml

    path = tmp_path / "twin.yaml"
    path.write_text(yaml.safe_dump(connection_bound_model().spec.model_dump(mode="json", exclude_unset=True)))
    base = [sys.executable, "-m", "tierlab.cli", "size", "optimize", str(path), "--method", "twin"]
    p = subprocess.run(
        [*base, "--threads", "2", "--connections", "1,2", "--start", "15", "--step", "0.5", "--runs", "2", "--workers", "1", "--rate", "40", "--json", "-"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    assert result["method"] == "twin" and (result["optimum"]["M"], result["optimum"]["N"]) == (2, 2)
    assert {(c["M"], c["N"]) for c in result["configurations"]} == {(2, 1), (2, 2)}
    assert result["servers"]["servers"] == -(-40 // result["optimum"]["lambda"])
    bad = subprocess.run([*base, "--trace", str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode != 0 and "--method paper" in bad.stderr


def test_sweep_is_the_same_in_process_in_workers_and_on_dask():
    distributed = pytest.importorskip("distributed")
    model = one_pool_model(1.0)
    runs = [Run({"workload.population.session_rate": r}, seed) for r in (3.0, 6.0) for seed in (1, 2)]
    measure = throughput
    inline = sweep(model, runs, measure, workers=1, progress=None)
    local = sweep(model, runs, measure, workers=2, progress=None)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        on_dask = sweep(model, runs, measure, scheduler=cluster.scheduler_address, progress=None)
    assert inline == local == on_dask
    assert inline[0] != inline[1]  # seeds differ


def test_size_profile_writes_the_same_profile_with_workers_and_on_dask(tmp_path):
    """The command a user runs (issue 19: sweeps scale): one worker, two, or a Dask
    LocalCluster through --scheduler write the same files, byte for byte."""
    distributed = pytest.importorskip("distributed")
    from tierlab.cli import cli

    model = EXAMPLES / "tpcw_2tier.yaml"
    grid = ["--threads", "5,10", "--connections", "2,5", "--duration", "300", "--warmup", "60"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        for name, how in {"one": ["--workers", "1"], "two": ["--workers", "2"], "dask": ["--scheduler", cluster.scheduler_address]}.items():
            cli.main(["size", "profile", str(model), "--out", str(tmp_path / name), *grid, *how], standalone_mode=False)
    files = {name: {p.name: p.read_bytes() for p in sorted((tmp_path / name).iterdir())} for name in ("one", "two", "dask")}
    assert files["one"] and files["one"] == files["two"] == files["dask"]
    assert "profile.json" in files["one"]
