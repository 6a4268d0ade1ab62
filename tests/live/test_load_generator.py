"""The live load generator against a stub HTTP/1.1 server on loopback: the chain's
mix, cookies per session, every failure counted by kind, an unreachable target."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler

import pytest

import tierlab.live
from tierlab.analysis.fluctuations import fluctuations
from tierlab.live.mapping import load_mapping
from tierlab.model import load_model

from conftest import EXAMPLES, StubServer, chain_mix, check_little, mix_distance


class Stub(BaseHTTPRequestHandler):
    """/ok → 200; /busy → 503; /fail → 500; /slow → 200 after 2 s; /garbage → not
    HTTP. Sets a `sid` cookie on a session's first request and logs what it saw."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes
    seen: list = []

    def do_GET(self):  # noqa: N802
        path = self.path.split("?")[0]
        self.seen.append((self.headers.get("x-tierlab-session"), self.headers.get("x-tierlab-type"), self.headers.get("cookie"), self.path))
        if path == "/garbage":
            self.wfile.write(b"this is not HTTP\r\n\r\n")
            self.close_connection = True
            return
        if path == "/slow":
            time.sleep(2)
        code = {"/busy": 503, "/fail": 500}.get(path, 200)
        body = b"hello"
        self.send_response(code)
        if not self.headers.get("cookie"):
            self.send_header("Set-Cookie", f"sid={self.headers.get('x-tierlab-session')}; Path=/")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def stub():
    Stub.seen = []
    server = StubServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _model(matrix: dict, start: str, clients: int = 8, think: float = 0.01, **workload) -> dict:
    types = {s for row in matrix.values() for s in row} | set(matrix)
    return {
        "name": "stub",
        "run": {"duration": 4, "warmup": 0.5, "seed": 3},
        "tiers": {"web": {"stations": {"cpu": {"kind": "cpu"}}}},
        "requests": {t: {"web": [{"cpu": 0.001}]} for t in types if t != "END_OF_SESSION"},
        "workload": {"population": {"clients": clients}, "chain": {"matrix": matrix, "start": start}, "think": think, **workload},
    }


def test_the_mix_follows_the_chains_stationary_distribution(stub):
    model = load_model(EXAMPLES / "tpcw_2tier.yaml").with_changes(
        {
            "workload.population": {"clients": 20},
            "workload.think": 0.002,
            "workload.session_end": {"after_requests": 100_000},
            "run.duration": 6,
            "run.warmup": 1,
        }
    )
    mapping = {
        "requests": {
            t: {"path": "/ok"} for t in ["HOME", "SREQ", "SRES", "NEWP", "BESS", "PROD", "SHOP", "CREG", "BUYR", "BUYC", "ORDI", "ORDD", "ADMR", "ADMC"]
        }
    }
    trace = tierlab.live.generate_load(load_model(model), load_mapping(mapping), target=stub)
    r = trace.requests
    assert len(r) > 1000 and (r.status == "ok").all()
    assert (r.retransmissions == 0).all()  # a stub that takes every connection at once
    assert mix_distance(r.type, chain_mix(model)) < 0.05
    check_little(trace, rel=0.05)
    # The client's 100 ms series adds up to the records, up to the requests at the
    # edges (at most one per client at the warm-up's end and at the run's end).
    arrivals = trace.series("client", "arrivals")[0]
    assert arrivals[arrivals.index >= 1].sum() == pytest.approx(len(r), abs=2 * 20)


class SlowToAccept(StubServer):
    """A server whose accept queue is full: backlog 1 (Linux queues two connections),
    and nothing accepted until it starts serving."""

    request_queue_size = 1


def test_syns_a_full_backlog_dropped_are_in_the_records():
    """Six clients at a server that starts accepting 1.5 s after they connect: the
    kernel drops the SYNs of all but the two it queues (the generator's reachability
    probe takes one), and those sessions' first requests record the SYNs sent again —
    the trace's `retransmissions`, as the simulator's backlog records its drops — having
    waited at least the first retransmission's second."""
    Stub.seen = []
    server = SlowToAccept(("127.0.0.1", 0), Stub)
    threading.Timer(1.5, server.serve_forever).start()
    model = _model({"A": {"A": 1}}, "A", clients=6, think=0.05)
    model["run"] = {"duration": 4, "warmup": 0, "seed": 1}
    try:
        trace = tierlab.live.generate_load(
            load_model(model), load_mapping({"requests": {"A": {"path": "/ok"}}}), target=f"127.0.0.1:{server.server_address[1]}"
        )
    finally:
        server.shutdown()
        server.server_close()
    r = trace.requests
    assert (r.status == "ok").all()
    late = r[r.retransmissions > 0]
    assert late.session.nunique() >= 4 and late.groupby("session").size().max() == 1  # the request that opened the connection
    assert (late.response_time >= 1.0).all()
    assert fluctuations(trace)["share_retransmitted"] == pytest.approx(len(late) / len(r))


def test_cookies_are_kept_per_session_and_values_drawn(stub):
    model = _model({"A": {"B": 1}, "B": {"A": 0.5, "END_OF_SESSION": 0.5}}, "A", clients=4)
    mapping = {
        "values": {"n": {"int": [1, 3], "per": "request"}, "who": {"choice": ["x y"]}},
        "requests": {"A": {"path": "/ok?n={n}&w={who}"}, "B": {"path": "/ok"}},
    }
    tierlab.live.generate_load(load_model(model), load_mapping(mapping), target=stub)
    by_session: dict = {}
    for sid, _, cookie, path in Stub.seen:
        by_session.setdefault(sid, []).append((cookie, path))
    assert len(by_session) > 10
    for sid, reqs in by_session.items():
        assert reqs[0][0] is None  # a new session starts without cookies …
        assert all(c == f"sid={sid}" for c, _ in reqs[1:])  # … and sends back its own
    ns = Counter(p.split("n=")[1][0] for _, _, _, p in Stub.seen if p.startswith("/ok?n="))
    assert set(ns) == {"1", "2", "3"}
    assert all("w=x+y" in p for *_, p in Stub.seen if p.startswith("/ok?n="))


def test_every_failure_is_counted_by_kind(stub):
    types = {"OK": "/ok", "BUSY": "/busy", "FAIL": "/fail", "GARBAGE": "/garbage", "SLOW": "/slow"}
    matrix = {t: {u: 0.2 for u in types} for t in types}
    model = _model(matrix, "OK", clients=6, think=0.05)
    model["run"] = {"duration": 5, "warmup": 0, "seed": 5}
    mapping = {"timeout": 1.0, "requests": {t: {"path": p} for t, p in types.items()}}
    trace = tierlab.live.generate_load(load_model(model), load_mapping(mapping), target=stub)
    s, r = trace.summary, trace.requests
    by_type = r.groupby("type", observed=True).status.agg(lambda x: set(x))
    assert by_type["OK"] == {"ok"}
    assert by_type["BUSY"] == {"rejected"}
    assert by_type["FAIL"] == {"error"} and by_type["GARBAGE"] == {"error"}
    assert by_type["SLOW"] == {"timeout"}
    assert s["errors"]["http_503"] == (r.status == "rejected").sum()
    assert s["errors"]["protocol"] == (r.type == "GARBAGE").sum() > 0
    assert s["errors"]["http_5xx"] == (r.type == "FAIL").sum() > 0
    assert s["errors"]["timeout"] == (r.type == "SLOW").sum() > 0
    assert sum(s["requests"].values()) - s["requests"]["unfinished"] == len(r)
    errors = trace.series("client", "errors")[0].sum()
    assert errors >= (r.status != "ok").sum()
    # The generator's own lag, per window of intended sends: never negative, and NaN
    # exactly where no request due then finished.
    lag = trace.series("client", "send_lag")[0]
    due = trace.series("client", "arrivals")[0]
    assert (lag.dropna() >= 0).all() and lag.isna().equals(due == 0)


def test_the_same_seed_walks_the_same_sessions(stub):
    model = _model({"A": {"B": 0.7, "A": 0.3}, "B": {"A": 0.5, "END_OF_SESSION": 0.5}}, "A", clients=1, think=0.0)
    mapping = {"requests": {"A": {"path": "/ok"}, "B": {"path": "/ok"}}}
    walks = []
    for _ in range(2):
        trace = tierlab.live.generate_load(load_model(model), load_mapping(mapping), target=stub, duration=1.0, warmup=0)
        walks.append(list(trace.requests.sort_values("id").type.astype(str)[:200]))
    assert len(walks[0]) == 200 and walks[0] == walks[1]


@pytest.mark.parametrize("population", [{"clients": 1}, {"session_rate": 25.0}], ids=["closed", "open"])
def test_live_and_simulated_one_seed_walks_the_same_sessions(stub, population):
    """The generator and the simulator seed each session's streams alike (a closed
    client's for all its sessions, an open population's n-th arrival's for its own), so
    session n walks the same pages live and simulated, whatever the server's timing. (One
    closed client: with more, sessions are numbered in the order the clients' timing
    starts them.)"""
    model = _model({"A": {"A": 0.3, "B": 0.5, "END_OF_SESSION": 0.2}, "B": {"A": 0.6, "END_OF_SESSION": 0.4}}, "A", think={"exponential": 0.01})
    model["workload"]["population"] = population
    model["run"] = {"duration": 3.0, "warmup": 0, "seed": 11, "records": True}
    live = tierlab.live.generate_load(load_model(model), load_mapping({"requests": {"A": {"path": "/ok"}, "B": {"path": "/ok"}}}), target=stub)
    simulated = tierlab.simulate(model)

    def walks(trace) -> dict:
        r = trace.requests.sort_values("start")
        return {sid: list(r.type.astype(str)[r.session == sid]) for sid in r.session.unique()}

    ours, theirs = walks(live), walks(simulated)
    compared = sorted(set(ours) & set(theirs))
    assert len(compared) >= 20 and sum(len(ours[s]) > 1 for s in compared) >= 10
    for sid in compared:  # the run's end cuts a session wherever its timing put it
        a, b = ours[sid], theirs[sid]
        n = min(len(a), len(b))
        assert a[:n] == b[:n], (sid, a, b)


def test_an_unreachable_target_is_a_clear_error_before_the_run():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = _model({"A": {"A": 1}}, "A")
    progress = []
    with pytest.raises(ValueError, match=r"cannot reach the target 127\.0\.0\.1:\d+.*refused"):
        tierlab.live.generate_load(
            load_model(model), load_mapping({"requests": {"A": {"path": "/"}}}), target=f"127.0.0.1:{port}", progress=lambda *a: progress.append(a)
        )
    assert progress == []  # refused before the run began, not after a run of failures


def test_the_generators_own_refusals_are_input_errors_naming_the_field():
    model = _model({"A": {"A": 1}}, "A")
    # More threads than any machine gives a load generator: refused, not a tokio panic.
    with pytest.raises(tierlab.InputError, match="workers = 100000: give 1 to 64"):
        tierlab.live.generate_load(load_model(model), load_mapping({"requests": {"A": {"path": "/"}}}), target="127.0.0.1:1", workers=100_000)
    with pytest.raises(tierlab.InputError, match='target "nohost": invalid socket address'):
        tierlab.live.generate_load(load_model(model), load_mapping({"requests": {"A": {"path": "/"}}}), target="nohost")


def test_a_mapping_must_cover_every_request_type():
    model = _model({"A": {"B": 1}, "B": {"A": 1}}, "A")
    with pytest.raises(ValueError, match=r"requests\.B: the model has this request type"):
        tierlab.live.generate_load(load_model(model), load_mapping({"requests": {"A": {"path": "/"}}}), target="127.0.0.1:1")
    with pytest.raises(ValueError, match=r"\{nope\} names no value"):
        tierlab.live.generate_load(load_model(model), load_mapping({"requests": {"A": {"path": "/{nope}"}, "B": {"path": "/"}}}), target="127.0.0.1:1")
    with pytest.raises(ValueError, match=r"requests\.A\.path.*has a space.*%20"):
        tierlab.live.generate_load(
            load_model(model), load_mapping({"requests": {"A": {"path": "/search?q=war and peace"}, "B": {"path": "/"}}}), target="127.0.0.1:1"
        )


# ---- workload phases (docs/phases.md) -------------------------------------------------

PHASED_MIX = {"INIT": {"A": 0.5, "B": 0.5}, "A": {"END_OF_SESSION": 1}, "B": {"END_OF_SESSION": 1}}


def test_the_generator_follows_the_rate_and_mix_phases(stub):
    """Sessions of one request at 60/s, 180/s from 3 s with B's share ¼ → ¾ (B ×3 in
    INIT's row, from A ×3 before): each phase's count of requests is Poisson (σ 13 and 23
    over its last 2.8 s), each share binomial (σ ≤ 0.032): all within 4 σ."""
    model = _model(PHASED_MIX, "INIT")
    del model["requests"]["INIT"]  # the start state, issuing nothing
    model["run"] = {"duration": 6, "warmup": 0, "seed": 7}
    model["workload"] |= {
        "population": {"session_rate": 60},
        "chain": {"matrix": PHASED_MIX, "start": "INIT", "reweight": {"A": 3}},
        "phases": [{"at": 3, "session_rate": 180, "reweight": {"B": 3}}],
    }
    mapping = {"requests": {"A": {"path": "/ok"}, "B": {"path": "/ok"}}}
    r = tierlab.live.generate_load(load_model(model), load_mapping(mapping), target=stub).requests
    for start, rate, share in [(0.2, 60, 0.25), (3.2, 180, 0.75)]:
        phase = r[(r.start >= start) & (r.start < start + 2.8)]
        expected = rate * 2.8
        assert abs(len(phase) - expected) <= 4 * expected**0.5, (start, len(phase))
        b = (phase.type == "B").mean()
        assert abs(b - share) <= 4 * (share * (1 - share) / len(phase)) ** 0.5, (start, b)


def test_a_phases_delay_is_refused_live():
    model = _model({"A": {"A": 1}}, "A")
    model["workload"]["phases"] = [{"at": 1, "delay": {"web": 0.002}}]
    with pytest.raises(tierlab.InputError, match=r"workload\.phases\[0\]\.delay: a live run cannot add a delay to a tier's visits"):
        tierlab.live.generate_load(load_model(model), load_mapping({"requests": {"A": {"path": "/"}}}), target="127.0.0.1:1")
