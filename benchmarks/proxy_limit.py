"""The dispatcher proxy with its per-backend limit on requests in flight against the same
proxy without it (issue 42's target: within 5% of its requests/s), side by side in one
run: three `tierlab-proxy --threads 1` processes (round robin, session mode `none`) in
front of the same nginx (one worker, two ports = two backends, a 15-byte 200), loaded in
turn by the same wrk (`-t1`, 50 keep-alive connections) — `off` (no limit), `fixed` (a
limit of 1,000: the accounting on every request, never reached) and `gradient` (Gradient2
of crates/control re-sizing each backend's limit every second within 100..1,000, from
1,000: the accounting and the controller, never reaching 50). Neither limit may refuse
a request here; wrk's non-2xx count says whether one did.

Rounds interleave the targets, each round starting one target later than the one
before, and the ratio `on / off` is taken within each round: the machine (2 shared
cores) drifts by more between rounds than the gap measured. Printed: every round, and
per limit the mean ratio with its 95% interval (Student's t over the rounds), of the
requests/s and of the proxy's CPU per request (from /proc; steadier under a loaded
machine); the last line is the figures as JSON.

    nice -n 19 python benchmarks/proxy_limit.py [--quick] [--rounds 10] [--duration 5]

Needs wrk and nginx (Debian: `apt-get install nginx-light wrk`) and builds the proxy
with `cargo build --release -p tierlab-proxy`, as `proxy_vs_haproxy/run.py` does (whose
wrk reading it uses). Measured figures: benchmarks/README.md, "Online control".
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from scipy import stats

from tierlab.live.lifecycle import free_ports
from tierlab.live.proxy import Limit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/: the shared loopback helpers
from loopback import print_rounds, rotated, start_nginx, wait_for  # noqa: E402
from proxy_vs_haproxy.run import ROOT, run_wrk  # noqa: E402

TARGETS: dict[str, dict | None] = {
    "off": None,
    "fixed": Limit(1000).config(),
    "gradient": Limit(1000, bounds=(100, 1000)).config(),
}


def start(d: Path, name: str, binary: Path, backends: tuple[int, int], limit: dict | None) -> tuple[subprocess.Popen, int]:
    """Our proxy on one thread, round robin, sessions off (`proxy_vs_haproxy`'s setup),
    with the per-backend `limit` if given; and its port."""
    (port,) = free_ports(1)
    conf = {"listen": f"127.0.0.1:{port}", "backends": [f"127.0.0.1:{b}" for b in backends], "policy": {"policy": "round_robin"}, "session": {"mode": "none"}}
    if limit is not None:
        conf["limit"] = limit
    (d / f"{name}.json").write_text(json.dumps(conf))
    return subprocess.Popen([str(binary), str(d / f"{name}.json"), "--threads", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), port


def interval95(xs: list[float]) -> tuple[float, float]:
    """The 95% confidence interval of the mean of `xs` (Student's t)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, m
    half = float(stats.t.ppf(0.975, len(xs) - 1)) * statistics.stdev(xs) / len(xs) ** 0.5
    return m - half, m + half


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="4 rounds of 2 s: a smoke run of half a minute")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=10)
    a = ap.parse_args()
    if a.quick:
        a.duration, a.rounds = 2.0, 4
    for tool in ("wrk", "nginx", "cargo"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: apt-get install nginx-light wrk (and a Rust toolchain)")
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "tierlab-proxy"], cwd=ROOT, check=True)
    binary = ROOT / "target" / "release" / "tierlab-proxy"
    p1, p2 = free_ports(2)
    procs: list[subprocess.Popen] = []
    ports: dict[str, tuple[int, int]] = {}  # name → (port, pid)
    rows: list[tuple[str, int, dict]] = []
    with tempfile.TemporaryDirectory() as prefix:
        d = Path(prefix)
        try:
            procs.append(start_nginx(prefix, [p1, p2]))
            for name, limit in TARGETS.items():
                proc, port = start(d, name, binary, (p1, p2), limit)
                procs.append(proc)
                ports[name] = (port, proc.pid)
            for port, _ in ports.values():
                wait_for(port)
            for r, name in rotated(list(TARGETS), a.rounds):
                port, pid = ports[name]
                rows.append((name, r, run_wrk(port, a.connections, a.duration, pid, None)))
        finally:
            for p in reversed(procs):
                p.terminate()
            for p in procs:
                p.wait(timeout=10)
    print_rounds(rows, 10)
    by = {(t, r): m for t, r, m in rows}
    result: dict = {"connections": a.connections, "duration": a.duration, "rounds": a.rounds, "target": "on/off ≥ 0.95"}
    result["rps"] = {n: round(statistics.median(m["rps"] for t, _, m in rows if t == n), 1) for n in TARGETS}
    result["cpu_us_per_request"] = {n: round(statistics.median(m["cpu_us"] for t, _, m in rows if t == n), 2) for n in TARGETS}
    result["errors"] = {n: sum(m["errors"] for t, _, m in rows if t == n) for n in TARGETS}
    for n in ("fixed", "gradient"):
        ratios = [by[n, r]["rps"] / by["off", r]["rps"] for r in range(a.rounds)]
        lo, hi = interval95(ratios)
        result[f"ratio_{n}"] = {"mean": round(statistics.fmean(ratios), 4), "ci95": [round(lo, 4), round(hi, 4)], "rounds": [round(x, 4) for x in ratios]}
        print(f"{n}/off: mean {statistics.fmean(ratios):.4f}, 95% interval [{lo:.4f}, {hi:.4f}]")
        # The proxy's CPU per request, paired likewise: a single-threaded proxy under wrk
        # serves about 1 / (CPU per request), and its CPU per request moves less with
        # the machine's load than requests/s do.
        cpu = [by[n, r]["cpu_us"] / by["off", r]["cpu_us"] for r in range(a.rounds)]
        lo, hi = interval95(cpu)
        result[f"cpu_ratio_{n}"] = {"mean": round(statistics.fmean(cpu), 4), "ci95": [round(lo, 4), round(hi, 4)]}
        print(f"{n}/off CPU per request: mean {statistics.fmean(cpu):.4f}, 95% interval [{lo:.4f}, {hi:.4f}]")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
