"""Our load generator vs wrk, side by side in one run: the same small loopback backend
(nginx, one worker, a fixed 200 response), the same number of connections and
threads, one fixed URL, no think time. Prints a table and, on the last line, the
figures as JSON (`ratio_vs_wrk` = our requests/s ÷ wrk's).

    python benchmarks/load_vs_wrk/run.py [--connections 50] [--duration 10] [--rounds 3]

Needs wrk and nginx (Debian: `apt-get install wrk nginx-light`). CPU seconds per
1,000 requests are the load generator's own: wrk's from its rusage as a child process,
ours from this process's rusage around `tierlab.live.generate_load` (the Rust threads; Python
imports happen before).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import tierlab.live
from tierlab.live import Mapping
from tierlab.live.lifecycle import free_ports
from tierlab.model import LoadedModel, load_model
from tierlab.trace.schema import sent

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/: the shared loopback helpers
from loopback import start_nginx, wrk_totals  # noqa: E402

HERE = Path(__file__).parent


def cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def run_wrk(port: int, connections: int, threads: int, duration: float) -> dict:
    before = cpu(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration:g}s", "--latency", f"http://127.0.0.1:{port}/"], capture_output=True, text=True, check=True
    ).stdout
    used = cpu(resource.RUSAGE_CHILDREN) - before
    total, errors, rps = wrk_totals(out)
    return {"rps": rps, "requests": total, "errors": errors, "cpu_per_1000": 1000 * used / total}


def run_ours(model: LoadedModel, mapping: Mapping, port: int, connections: int, threads: int, duration: float) -> dict:
    before = cpu(resource.RUSAGE_SELF)
    trace = tierlab.live.generate_load(model, mapping, target=f"127.0.0.1:{port}", clients=connections, duration=duration, workers=threads)
    used = cpu(resource.RUSAGE_SELF) - before
    s = trace.summary
    total = sent(s["requests"])
    return {"rps": s["throughput"], "requests": total, "errors": total - s["requests"]["ok"], "cpu_per_1000": 1000 * used / total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1, help="threads of each load generator (the other core runs nginx)")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "results.json")
    a = ap.parse_args()
    for tool in ("wrk", "nginx"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: apt-get install wrk nginx-light")
    model, mapping = load_model(HERE / "fixed_url.yaml"), tierlab.live.load_mapping(HERE / "fixed_url_http.yaml")
    (port,) = free_ports(1)
    with tempfile.TemporaryDirectory() as prefix:
        nginx = start_nginx(prefix, [port])
        try:
            rows = []
            for r in range(a.rounds):  # alternate, so drift hits both alike
                rows.append(("wrk", r, run_wrk(port, a.connections, a.threads, a.duration)))
                rows.append(("tierlab", r, run_ours(model, mapping, port, a.connections, a.threads, a.duration)))
        finally:
            nginx.terminate()
            nginx.wait(timeout=10)
    # The acquired resource usage of children only counts once nginx is reaped; wrk's
    # was taken per run above, before that.
    print(f"{'tool':8} {'round':>5} {'req/s':>10} {'requests':>10} {'errors':>7} {'CPU s/1000':>10}")
    for tool, r, m in rows:
        print(f"{tool:8} {r:>5} {m['rps']:>10.0f} {m['requests']:>10} {m['errors']:>7} {m['cpu_per_1000']:>10.4f}")
    med = lambda tool, k: statistics.median(m[k] for t, _, m in rows if t == tool)  # noqa: E731
    result = {
        "connections": a.connections,
        "threads": a.threads,
        "duration": a.duration,
        "rounds": a.rounds,
        "tierlab_rps": round(med("tierlab", "rps"), 1),
        "wrk_rps": round(med("wrk", "rps"), 1),
        "ratio_vs_wrk": round(med("tierlab", "rps") / med("wrk", "rps"), 3),
        "tierlab_cpu_s_per_1000": round(med("tierlab", "cpu_per_1000"), 5),
        "wrk_cpu_s_per_1000": round(med("wrk", "cpu_per_1000"), 5),
        "tierlab_errors": sum(m["errors"] for t, _, m in rows if t == "tierlab"),
        "wrk_errors": sum(m["errors"] for t, _, m in rows if t == "wrk"),
    }
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
