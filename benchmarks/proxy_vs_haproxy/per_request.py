"""What HAProxy and our proxy cost per request, counted rather than timed, in run.py's
setup (the same nginx, wrk -t1 with the session script, round robin, one thread each):
the wall clock on a shared machine drifts more than the gap between them, these counts
do not. For each target, per request and for each process of the chain (the proxy,
the nginx worker, wrk): syscalls, `epoll_wait` calls (each a batch of events) and
wake-ups of other processes (`sched:sched_waking`: each a sleeping peer woken), counted
in the kernel by perf tracepoints; plus CPU µs per request (task-clock), which still
depends on the machine. Rounds rotate the order as run.py does. With --callgrind,
instead: each proxy's user-space instructions per request (valgrind; the kernel's part
is not counted), collected while wrk runs.

    python benchmarks/proxy_vs_haproxy/per_request.py [--rounds 3] [--duration 4] [--connections 50] [--callgrind] [BINARY ...]

BINARY: our proxy builds to compare (default: `cargo build --release`'s). Needs perf and,
for --callgrind, valgrind (Debian: linux-perf, valgrind), and perf tracepoints (root, or
kernel.perf_event_paranoid ≤ 1).
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from tierlab.live.lifecycle import free_ports

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/: the shared loopback helpers, and run.py as its folder's
from loopback import found, start_nginx, wait_for, wrk_totals  # noqa: E402
from proxy_vs_haproxy.run import ROOT, WRK_SCRIPT, start_haproxy, start_ours  # noqa: E402

COUNTED = ("raw_syscalls:sys_enter", "syscalls:sys_enter_epoll_wait", "sched:sched_waking", "task-clock")
ROUND_ROBIN = {"policy": "round_robin"}


def perf_stat(out: Path, args: list[str]) -> list[str]:
    return ["perf", "stat", "-x,", "-o", str(out), "-e", ",".join(COUNTED), *args]


def per_request(out: Path, requests: int) -> dict[str, float]:
    """syscalls, epoll_waits and wake-ups per request, and CPU µs per request."""
    counts = {}
    for line in out.read_text().splitlines():
        f = line.split(",")
        if len(f) > 3 and f[2] in COUNTED and f[0].replace(".", "").isdigit():
            counts[f[2]] = float(f[0])
    names = ("syscalls", "epoll_wait", "wakeups", "cpu_us")
    scale = (1, 1, 1, 1e3)  # task-clock is in ms
    return {n: round(counts.get(k, 0.0) * s / requests, 3 if s == 1 else 2) for n, k, s in zip(names, COUNTED, scale)}


def wrk(port: int, connections: int, duration: float, script: Path, wrap: tuple[str, ...] | list[str] = ()) -> int:
    out = subprocess.run(
        [*wrap, "wrk", "-t1", f"-c{connections}", f"-d{duration:g}s", "-s", str(script), f"http://127.0.0.1:{port}/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return wrk_totals(out)[0]


def counted(targets: dict, worker: int, a, script: Path, d: Path) -> None:
    for r in range(a.rounds):
        names = list(targets)
        for name in names[r % len(names) :] + names[: r % len(names)]:
            port, pid = targets[name]
            wrk(port, a.connections, 1, script)  # warm: connections pooled, buffers grown
            watchers = [subprocess.Popen(perf_stat(d / f"{who}.txt", ["-p", str(p)])) for who, p in (("proxy", pid), ("nginx", worker))]
            time.sleep(0.3)  # perf attached
            n = wrk(port, a.connections, a.duration, script, perf_stat(d / "wrk.txt", []))
            for w in watchers:
                w.send_signal(signal.SIGINT)
                w.wait()
            rows = {who: per_request(d / f"{who}.txt", n) for who in ("proxy", "nginx", "wrk")}
            chain = {k: round(sum(row[k] for row in rows.values()), 3) for k in rows["proxy"]}
            print(f"{name:10} round {r}: {n} requests")
            for who, row in [*rows.items(), ("chain", chain)]:
                print(f"    {who:6} " + "  ".join(f"{k} {v}" for k, v in row.items()))


def instructions(name: str, start, a, script: Path, d: Path) -> None:
    out = d / f"{name}.callgrind"
    proc, port = start(("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"))
    try:
        wait_for(port, within=60)
        wrk(port, a.connections, 2, script)
        subprocess.run(["callgrind_control", "--zero", str(proc.pid)], capture_output=True, check=True)
        n = wrk(port, a.connections, a.duration, script)
        subprocess.run(["callgrind_control", "--dump=wrk", str(proc.pid)], capture_output=True, check=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    dump = next(f for f in d.glob(f"{name}.callgrind.*") if "Trigger: dump wrk" in f.read_text())
    total = int(found(r"^summary: (\d+)", dump.read_text(), re.M))
    print(f"{name:10} {n} requests, {total / n:.0f} instructions per request (user space)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="*", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=4.0)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--callgrind", action="store_true", help="user-space instructions per request instead (wrk -c10 by default)")
    a = ap.parse_args()
    if a.callgrind and a.connections == 50:
        a.connections = 10  # under valgrind a proxy serves a few thousand requests/s
    if not a.binaries:
        subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "tierlab-proxy"], cwd=ROOT, check=True)
        a.binaries = [ROOT / "target" / "release" / "tierlab-proxy"]
    p1, p2 = free_ports(2)
    with tempfile.TemporaryDirectory() as prefix:
        d = Path(prefix)
        script = d / "sessions.lua"
        script.write_text(WRK_SCRIPT.format(sessions=1000))
        nginx = start_nginx(prefix, [p1, p2])
        # Each takes the command to wrap the process in (none, or valgrind's).
        starts = {"haproxy": partial(start_haproxy, d, (p1, p2))}
        for i, b in enumerate(a.binaries):
            starts[f"ours{i}"] = partial(start_ours, d, f"ours{i}", b, ROUND_ROBIN, (p1, p2))
        procs = []
        try:
            if a.callgrind:
                for name, start in starts.items():
                    instructions(name, start, a, script, d)
                return
            targets = {}
            for name, start in starts.items():
                proc, port = start()
                procs.append(proc)
                targets[name] = (port, proc.pid)
            for port, _ in targets.values():
                wait_for(port)
            worker = int(subprocess.run(["pgrep", "-P", str(nginx.pid)], capture_output=True, text=True, check=True).stdout.split()[0])
            counted(targets, worker, a, script, d)
        finally:
            for p in [*procs, nginx]:
                p.terminate()
                p.wait(timeout=10)


if __name__ == "__main__":
    main()
