"""The proxy's per-backend limit on requests in flight (crates/proxy/README.md `limit`),
live: the proxy as `tierlab live up --model` runs it (`python -m tierlab.live.proxy`)
in front of a slow backend. Past the limit a request gets 503 with the configured
Retry-After and never reaches the backend; every request is counted — by the client,
the proxy's summary and its decision log alike — and a load generator's trace counts
the refused ones as rejected, never lost: sent = ok + rejected + timeout + error +
unfinished."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

import tierlab.live
from tierlab.live.admin import ProxyAdmin, ServerGone
from tierlab.live.decisions import read_decisions
from tierlab.live.lifecycle import free_ports
from tierlab.live.mapping import load_mapping
from tierlab.live.proxy import Limit
from tierlab.model import load_model
from tierlab.trace.schema import sent

from conftest import EXAMPLES, StubServer

TYPES = ["HOME", "SREQ", "SRES", "NEWP", "BESS", "PROD", "SHOP", "CREG", "BUYR", "BUYC", "ORDI", "ORDD", "ADMR", "ADMC"]


class SlowBackend:
    """HTTP/1.1 on loopback (keep-alive) answering 200 after `delay` seconds, or, while
    `gate` is cleared, only once it is set; it counts the requests it got."""

    def __init__(self, delay: float = 0.0):
        self.gate = threading.Event()
        self.gate.set()
        self.seen = 0
        backend = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                backend.seen += 1  # one increment under the GIL per request
                backend.gate.wait(30)
                time.sleep(delay)
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:  # the proxy dropped it: its client left at the run's end
                    self.close_connection = True

            def log_message(self, *args) -> None:
                pass

        self.server = StubServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def proxy(workdir: Path, backend: int, limit: Limit) -> Iterator[tuple[int, ProxyAdmin, Path, Path]]:
    """The proxy in front of `backend` with `limit` (its config as `up_cluster` writes
    it): its port, its admin, its decision log and its summary file (written when it
    stops, at the block's end)."""
    port, admin = free_ports(2)
    (workdir / "token").write_text("secret")
    decisions, summary = workdir / "decisions.jsonl", workdir / "summary.json"
    config = {
        "listen": f"127.0.0.1:{port}",
        "backends": [f"127.0.0.1:{backend}"],
        "policy": {"policy": "round_robin"},
        "admin": {"listen": f"127.0.0.1:{admin}", "token_file": str(workdir / "token")},
        "decisions": str(decisions),
        "summary": str(summary),
        "limit": limit.config(),
    }
    (workdir / "proxy.json").write_text(json.dumps(config))
    p = subprocess.Popen([sys.executable, "-m", "tierlab.live.proxy", str(workdir / "proxy.json"), "--threads", "1"])
    a = ProxyAdmin(workdir, admin)
    try:
        _until("the proxy answers", lambda: _answers(a))
        yield port, a, decisions, summary
    finally:
        p.terminate()
        assert p.wait(timeout=30) == 0  # SIGTERM: the summary written, the log flushed


def _answers(a: ProxyAdmin) -> bool:
    try:
        a.summary()
        return True
    except ServerGone:  # not listening yet
        return False


def _until(what: str, cond, within: float = 30.0) -> None:
    """Poll `cond` until it holds (bounded: generous on a busy machine)."""
    end = time.monotonic() + within
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {within} s")
        time.sleep(0.02)


def _get(port: int) -> tuple[int, str | None]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request("GET", "/")
        r = c.getresponse()
        r.read()
        return r.status, r.getheader("Retry-After")
    finally:
        c.close()


def test_past_the_limit_503_with_retry_after_and_every_request_counted(tmp_path):
    backend = SlowBackend()
    backend.gate.clear()
    try:
        with proxy(tmp_path, backend.port, Limit(3, retry_after=2)) as (port, admin, log, summary):
            held: list[tuple[int, str | None]] = []
            threads = [threading.Thread(target=lambda: held.append(_get(port))) for _ in range(3)]
            for t in threads:
                t.start()
            _until("three requests at the backend", lambda: backend.seen == 3)
            refused = [_get(port) for _ in range(5)]
            s = admin.summary()["proxy"]
            b = s["backends"][0]
            assert (s["rejected_limit"], b["limit"], b["inflight"], b["limit_reason"]) == (5, 3, 3, None)  # fixed: no controller
            backend.gate.set()
            for t in threads:
                t.join(60)
    finally:
        backend.close()
    assert refused == [(503, "2")] * 5
    assert sorted(held) == [(200, None)] * 3
    assert backend.seen == 3, "a refused request never reaches the backend"
    # Sent 8 = 3 served + 5 refused at the limit, in the summary file and the log alike.
    final = json.loads(summary.read_text())["proxy"]
    assert (final["requests"], final["rejected_limit"], final["backends"][0]["served"]) == (8, 5, 3)
    outcomes = read_decisions(log)["outcome"].value_counts().to_dict()
    assert outcomes == {"served": 3, "limit": 5}


@pytest.mark.parametrize("limit", [Limit(2), Limit(2, bounds=(1, 4), interval=0.5)], ids=["fixed", "gradient"])
def test_a_load_generators_trace_counts_the_refused_as_rejected(tmp_path, limit):
    """An open load of 100 requests/s on a 50 ms backend (5 in flight on average) behind
    a limit of 2 (fixed, or Gradient2 within 1..4): many refused, none lost."""
    backend = SlowBackend(delay=0.05)
    model = load_model(EXAMPLES / "tpcw_2tier.yaml").with_changes(
        {
            "workload.population": {"session_rate": 100.0},
            "workload.session_end": {"after_requests": 1},
            "run.duration": 6.0,
            "run.warmup": 0.0,
            "run.records": True,
            "run.seed": 7,
        }
    )
    mapping = load_mapping({"requests": {t: {"path": "/"} for t in TYPES}})
    try:
        with proxy(tmp_path, backend.port, limit) as (port, admin, log, summary):
            trace = tierlab.live.generate_load(model, mapping, target=f"127.0.0.1:{port}")
            # The requests the generator left at its end finish (or are dropped) first.
            _until("nothing in flight", lambda: admin.summary()["proxy"]["backends"][0]["inflight"] == 0)
    finally:
        backend.close()
    r = trace.summary["requests"]
    assert r["rejected"] > 0 and r["ok"] > 0 and r["error"] == r["timeout"] == 0
    assert sent(r) == r["ok"] + r["rejected"] + r["unfinished"]
    assert sent(r) - r["unfinished"] == len(trace.requests)  # a record per finished request
    final = json.loads(summary.read_text())["proxy"]
    # Every 503 the generator got is one the proxy refused at the limit; a refusal the
    # generator had not read when its run ended is one of its unfinished requests.
    assert r["rejected"] <= final["rejected_limit"] <= r["rejected"] + r["unfinished"]
    assert (read_decisions(log)["outcome"] == "limit").sum() == final["rejected_limit"]
    backends = final["backends"][0]
    assert 1 <= backends["limit"] <= (limit.bounds or (2, 2))[1]
    if limit.bounds is not None:
        assert "gradient" in backends["limit_reason"]
