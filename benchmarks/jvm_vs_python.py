"""The JVM bookstore against the Python one on this machine (issue 40): throughput under
a saturating closed load, and the server's CPU time per request.

Both servers run at once (`Testbed.started`, `server=python|java`), each on its own
copy of the same database (the Python data generator's, SQLite, 1,000 items, 1 EB),
each with its (M, N); the runs alternate
Python, JVM, Python, JVM, … (`--repeats` pairs), so a slow phase of a shared machine
falls on both alike. A run is `tierlab live run`'s path (`Testbed.run`): the model's
pools set on the server through its admin endpoint, then the load generator — the
TPC-W shopping mix of examples/tpcw_2tier.yaml, `--clients` browsers with no think
time. Measured per run: the completed requests per second over the measured period
(the load generator's), and the server process's CPU seconds (user + system, psutil)
over the load divided by the requests the server finished meanwhile (its admin
counts). Reported: each server's mean and 95% interval (Student t over the runs), and
the JVM / Python throughput ratio of the pairs with its interval.

    python benchmarks/jvm_vs_python.py [--repeats 3] [--duration 20] [--warmup 5] \\
        [--prime 90] [--clients 32] [--python 20,10] [--java 8,8]     # last line: JSON

The machine's 1-minute load average is recorded with each run: on a machine others
share, a run's numbers mean little without it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from contextlib import ExitStack
from pathlib import Path

import psutil
from scipy import stats

import tierlab
from tierlab.live import load_mapping
from tierlab.live.mapping import Mapping
from tierlab.live.testbed import Testbed

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "tpcw_2tier.yaml"
MAPPING = ROOT / "examples" / "tpcw_http.yaml"


def measure(bed: Testbed, model: tierlab.LoadedModel, mapping: Mapping) -> dict:
    """One run on the server: throughput, and its CPU seconds per finished request."""
    process = psutil.Process(bed.state.pid)
    before_cpu, before = process.cpu_times(), bed.admin.metrics()["requests"]
    trace = bed.run(model, mapping)
    after_cpu, after = process.cpu_times(), bed.admin.metrics()["requests"]
    finished = sum(after.values()) - sum(before.values())
    cpu = (after_cpu.user + after_cpu.system) - (before_cpu.user + before_cpu.system)
    s, r, rt = trace.summary, trace.requests, trace.summary["response_time"]
    assert r is not None and rt is not None  # a live run records every request, and this one serves some
    return {
        "throughput": s["throughput"],
        "cpu_ms_per_request": 1000 * cpu / finished,
        "requests": finished,
        "errors": int((r.status != "ok").sum()),
        "p50_ms": 1000 * rt["p50"],
    }


def interval(values: list[float]) -> dict:
    """Mean and the 95% Student-t interval's half-width."""
    mean = statistics.fmean(values)
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan")
    return {"mean": mean, "half_width_95": half, "runs": values}


def _model(a, m: int, n: int, duration: float, seed: int = 0) -> tierlab.LoadedModel:
    return tierlab.load_model(MODEL).with_changes(
        {
            "workload.population": {"clients": a.clients},
            "workload.think": 0.0,
            "workload.session_end": {"after_requests": 100_000},
            "run.duration": duration,
            "run.warmup": a.warmup,
            "run.seed": seed,
            "tiers.app.pools.threads.size": m,
            "tiers.app.pools.db.size": n,
            "tiers.app.pools.db.caching": "transaction",
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--prime", type=float, default=90.0, help="seconds of the unmeasured first run on each server")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--python", default="20,10", help="M,N of the Python bookstore")
    ap.add_argument("--java", default="8,8", help="M,N of the JVM bookstore")
    a = ap.parse_args()
    configs = {"python": tuple(map(int, a.python.split(","))), "java": tuple(map(int, a.java.split(",")))}
    mapping = load_mapping(MAPPING)
    runs: dict[str, list[dict]] = {"python": [], "java": []}
    with tempfile.TemporaryDirectory(prefix="jvm_vs_python-") as tmp, ExitStack() as up:
        beds = {server: up.enter_context(Testbed.started(Path(tmp) / server, server=server, threads=m, connections=n)) for server, (m, n) in configs.items()}
        # A first, unmeasured run each (`--prime` seconds): the JVM compiles its hot paths
        # (on a busy machine its compiler threads take long to get their turns), both
        # fill their caches.
        for server, (m, n) in configs.items():
            measure(beds[server], _model(a, m, n, a.prime), mapping)
        for k in range(a.repeats):
            for server, (m, n) in configs.items():
                r = measure(beds[server], _model(a, m, n, a.duration, seed=k + 1), mapping) | {"load_average_1min": os.getloadavg()[0]}
                runs[server].append(r)
                print(
                    f"{server} run {k + 1}: {r['throughput']:.1f} req/s, {r['cpu_ms_per_request']:.2f} CPU ms/request, p50 {r['p50_ms']:.1f} ms, {r['errors']} errors",
                    flush=True,
                )
    ratios = [j["throughput"] / p["throughput"] for p, j in zip(runs["python"], runs["java"])]
    out = {
        "clients": a.clients,
        "configs": {s: {"threads": m, "connections": n} for s, (m, n) in configs.items()},
        **{
            s: {
                "throughput": interval([r["throughput"] for r in rs]),
                "cpu_ms_per_request": interval([r["cpu_ms_per_request"] for r in rs]),
                "errors": sum(r["errors"] for r in rs),
            }
            for s, rs in runs.items()
        },
        "throughput_ratio_java_over_python": interval(ratios),
        "load_average_1min": [r["load_average_1min"] for p, j in zip(runs["python"], runs["java"]) for r in (p, j)],
        "cores": os.cpu_count(),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
