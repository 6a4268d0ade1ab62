"""Our dispatcher proxy vs HAProxy, side by side in one run: the same nginx backend
(one worker, two listening ports = two backends, a fixed 200 response), the same
client (wrk, one thread), the same connections, round robin without persistence,
each proxy on one thread; rounds interleaved, each round starting one target later
than the one before, so drift hits all alike. Our proxy also
runs `least_active` and `redal`, to price the policy. Every request carries
`X-Tierlab-Session: K`, K uniform over `--sessions` sessions (a wrk Lua script, the
same for every target; HAProxy ignores the header), so ReDAL's reservations are made
and cancelled as in a session workload rather than piling up for anonymous requests
(`--sessions 0`). Prints a table and, on the last line, the figures as JSON: `ratio_vs_haproxy` (our req/s ÷ HAProxy's, round robin),
`cpu_us_per_request` (each proxy process's CPU, from /proc, per request) and
`policy_overhead_us` (our CPU µs per request with the policy minus with round robin).
Ratios and overheads are taken within each round, then the median over rounds: the
machine's speed drifts by more between rounds than the gap between the targets.

    python benchmarks/proxy_vs_haproxy/run.py [--quick] [--connections 50] [--duration 10] [--rounds 5] [--sessions 1000]

Installs nothing. Needs wrk, nginx and HAProxy (Debian:
`apt-get install haproxy nginx-light wrk`) and builds the proxy with
`cargo build --release -p tierlab-proxy` (cargo's own cache, nothing system-wide).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tierlab.live.lifecycle import free_ports

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/: the shared loopback helpers
from loopback import print_rounds, rotated, start_nginx, wait_for, wrk_totals  # noqa: E402

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
HAPROXY_CONF = """
global
    nbthread 1
    maxconn 4000
defaults
    mode http
    timeout connect 5s
    timeout client 300s
    timeout server 300s
    option http-keep-alive
    http-reuse always
frontend f
    bind 127.0.0.1:{port}
    default_backend b
backend b
    balance roundrobin
    server s1 127.0.0.1:{p1}
    server s2 127.0.0.1:{p2}
"""
# The model's defaults for redal (tierlab.model.spec.RedalDispatch), without waiting.
POLICIES: dict[str, dict] = {
    "round_robin": {"policy": "round_robin"},
    "least_active": {"policy": "least_active"},
    "redal": {"policy": "redal", "alpha": 0.9, "slice": 1.0, "think_time": 10.0, "window": 100, "intervals": 5, "interval": 1.0, "wait": False},
}
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (and its threads) from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def start_haproxy(d: Path, backends: tuple[int, int], wrap: tuple[str, ...] = ()) -> tuple[subprocess.Popen, int]:
    """HAProxy (its config in the folder `d`) and the free port it listens on; `wrap`: a
    command to run it under (valgrind)."""
    (port,) = free_ports(1)
    (d / "haproxy.cfg").write_text(HAPROXY_CONF.format(port=port, p1=backends[0], p2=backends[1]))
    return subprocess.Popen([*wrap, "haproxy", "-db", "-f", str(d / "haproxy.cfg")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), port


def start_ours(d: Path, name: str, binary: Path, policy: dict, backends: tuple[int, int], wrap: tuple[str, ...] = ()) -> tuple[subprocess.Popen, int]:
    """Our proxy on one thread with `policy`, as `start_haproxy` starts HAProxy."""
    (port,) = free_ports(1)
    conf = {"listen": f"127.0.0.1:{port}", "backends": [f"127.0.0.1:{b}" for b in backends], "policy": policy, "session": {"mode": "none"}}
    (d / f"{name}.json").write_text(json.dumps(conf))
    return subprocess.Popen([*wrap, str(binary), str(d / f"{name}.json"), "--threads", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), port


WRK_SCRIPT = """
local sessions = {sessions}
request = function()
    return wrk.format(nil, nil, {{["X-Tierlab-Session"] = tostring(math.random(sessions))}})
end
"""


def run_wrk(port: int, connections: int, duration: float, pid: int, script: Path | None) -> dict:
    before = cpu_seconds(pid)
    lua = ["-s", str(script)] if script else []
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{duration:g}s", *lua, f"http://127.0.0.1:{port}/"], capture_output=True, text=True, check=True
    ).stdout
    used = cpu_seconds(pid) - before
    total, errors, rps = wrk_totals(out)
    return {"rps": rps, "requests": total, "errors": errors, "cpu_us": 1e6 * used / max(total, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 rounds of 3 s: a smoke run of about a minute")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sessions", type=int, default=1000, help="sessions named by X-Tierlab-Session; 0: anonymous requests")
    ap.add_argument("--out", type=Path, default=HERE / "results.json")
    a = ap.parse_args()
    if a.quick:
        a.duration, a.rounds = 3.0, 3
    for tool in ("wrk", "nginx", "haproxy", "cargo"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: apt-get install haproxy nginx-light wrk (and a Rust toolchain)")
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "tierlab-proxy"], cwd=ROOT, check=True)
    binary = ROOT / "target" / "release" / "tierlab-proxy"
    p1, p2 = free_ports(2)
    procs: list[subprocess.Popen] = []
    targets: dict[str, tuple[int, int]] = {}  # name → (port, pid)
    with tempfile.TemporaryDirectory() as prefix:
        d = Path(prefix)
        try:
            procs.append(start_nginx(prefix, [p1, p2]))
            proc, port = start_haproxy(d, (p1, p2))
            procs.append(proc)
            targets["haproxy"] = (port, proc.pid)
            for name, policy in POLICIES.items():
                proc, port = start_ours(d, name, binary, policy, (p1, p2))
                procs.append(proc)
                targets[f"ours_{name}"] = (port, proc.pid)
            for port, _ in targets.values():
                wait_for(port)
            script = None
            if a.sessions > 0:
                script = d / "sessions.lua"
                script.write_text(WRK_SCRIPT.format(sessions=a.sessions))
            rows = []
            for r, name in rotated(list(targets), a.rounds):
                port, pid = targets[name]
                rows.append((name, r, run_wrk(port, a.connections, a.duration, pid, script)))
        finally:
            for p in reversed(procs):
                p.terminate()
            for p in procs:
                p.wait(timeout=10)
    print_rounds(rows, 18)

    def med(name: str, k: str) -> float:
        return statistics.median(m[k] for t, _, m in rows if t == name)

    by_round = {(t, r): m for t, r, m in rows}

    def paired(ours: str, base: str, k: str, op) -> float:
        """The median over rounds of `op(ours, base)` within each round."""
        return statistics.median(op(by_round[ours, r][k], by_round[base, r][k]) for r in range(a.rounds))

    result = {
        "connections": a.connections,
        "duration": a.duration,
        "rounds": a.rounds,
        "threads_per_proxy": 1,
        "sessions": a.sessions,
        "rps": {name: round(med(name, "rps"), 1) for name in targets},
        "ratio_vs_haproxy": round(paired("ours_round_robin", "haproxy", "rps", lambda x, y: x / y), 3),
        "cpu_us_per_request": {"ours": round(med("ours_round_robin", "cpu_us"), 2), "haproxy": round(med("haproxy", "cpu_us"), 2)},
        "policy_overhead_us": {p: round(paired(f"ours_{p}", "ours_round_robin", "cpu_us", lambda x, y: x - y), 2) for p in ("redal", "least_active")},
        "errors": {name: sum(m["errors"] for t, _, m in rows if t == name) for name in targets},
    }
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
