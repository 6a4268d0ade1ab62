"""A model too large for the memory this process may use is refused before the engine
starts, naming the field and the estimate: under `ulimit -v 4194304` (4 GiB of address
space) 10 million closed clients (≈ 6.8 GB resident, 14 GB by the guard's estimate of
what may be mapped) had the engine abort on a failed allocation (SIGABRT)."""

from __future__ import annotations

import resource
import subprocess
import sys

import yaml

AS_LIMIT = 4 * 2**30  # bytes: `ulimit -v 4194304`


def model(clients: int) -> dict:
    return {
        "run": {"duration": 10, "warmup": 1, "seed": 1, "window": 1, "records": False},
        "tiers": {"app": {"pools": {"threads": {"kind": "threads", "size": 4}}, "stations": {"cpu": {"kind": "cpu"}}}},
        "requests": {"A": {"app": [{"acquire": "threads"}, {"cpu": 0.01}, {"release": "threads"}]}},
        "workload": {"population": {"clients": clients}, "think": 1.0, "chain": {"matrix": {"A": {"A": 1.0}}, "start": "A"}},
    }


def simulate_under_ulimit_v(tmp_path, clients: int) -> subprocess.CompletedProcess:
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(model(clients)))

    def limit_address_space() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))

    return subprocess.run(
        [sys.executable, "-m", "tierlab.cli", "simulate", str(path), "--out", str(tmp_path / "out"), "--quiet"],
        capture_output=True,
        text=True,
        preexec_fn=limit_address_space,
    )


def test_ten_million_clients_under_ulimit_v_end_in_a_clean_error(tmp_path):
    r = simulate_under_ulimit_v(tmp_path, 10_000_000)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])  # an input error, not a signal
    assert "workload.population.clients" in r.stderr, r.stderr
    assert "1e+07 sessions at once ≈ 14 GB" in r.stderr, r.stderr
    assert "ulimit -v" in r.stderr and "4.29 GB" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr
    assert not (tmp_path / "out").exists(), "refused before anything was written"


def test_a_model_that_fits_runs_under_the_same_limit(tmp_path):
    r = simulate_under_ulimit_v(tmp_path, 1_000)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "out" / "summary.json").exists()
