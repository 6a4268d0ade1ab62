"""What the loopback benchmarks share: waiting for a server to open a port (free ports:
`tierlab.live.lifecycle.free_ports`),
the nginx backend they load (one worker, a fixed 200 response), and reading wrk's report."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

NGINX_CONF = """
worker_processes 1;
daemon off;
error_log {prefix}/error.log;
pid {prefix}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 10000000;
    keepalive_timeout 300s;
    client_body_temp_path {prefix}/body;
    server {{
{listen}
        location / {{ return 200 "hello, tierlab\\n"; }}
    }}
}}
"""


def wait_for(port: int, within: float = 10.0) -> None:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing opened port {port} within {within} s")


def found(pattern: str, text: str, flags: int = 0) -> str:
    """The first group of `pattern` in a tool's output; exits showing the output where
    it is not there (the tool failed, or printed another format)."""
    m = re.search(pattern, text, flags)
    if m is None:
        raise SystemExit(f"no {pattern!r} in this output:\n{text}")
    return m.group(1)


def wrk_totals(out: str) -> tuple[int, int, float]:
    """From wrk's report: the requests, the errors (socket errors and non-2xx/3xx
    responses) and the requests/s."""
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = sum(int(x) for x in re.findall(r"(?:connect|read|write|timeout) (\d+)", out)) + (int(non2xx.group(1)) if non2xx else 0)
    return int(found(r"(\d+) requests in", out)), errors, float(found(r"Requests/sec:\s+([\d.]+)", out))


def start_nginx(prefix: str, ports: list[int]) -> subprocess.Popen:
    """nginx listening on `ports`, its files in the folder `prefix`; once it accepts."""
    listen = "\n".join(f"        listen 127.0.0.1:{p} backlog=4096;" for p in ports)
    (Path(prefix) / "nginx.conf").write_text(NGINX_CONF.format(prefix=prefix, listen=listen))
    nginx = subprocess.Popen(["nginx", "-p", prefix, "-c", f"{prefix}/nginx.conf"], stderr=subprocess.DEVNULL)
    for p in ports:
        wait_for(p)
    return nginx


def rotated(names: list[str], rounds: int) -> Iterator[tuple[int, str]]:
    """(round, target) in the order a benchmark measures them: every target once a
    round, each round's order rotated by one, so that no target is always first on a
    machine whose speed drifts."""
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            yield r, name


def print_rounds(rows: list[tuple[str, int, dict]], width: int) -> None:
    """Each round's wrk figures (`run_wrk`'s), one line a target and round."""
    print(f"{'target':{width}} {'round':>5} {'req/s':>10} {'requests':>10} {'errors':>7} {'CPU µs/req':>10}")
    for name, r, m in rows:
        print(f"{name:{width}} {r:>5} {m['rps']:>10.0f} {m['requests']:>10} {m['errors']:>7} {m['cpu_us']:>10.2f}")
