"""Coordinated omission, shown: a loopback server stalls every request for 1 s out of
every 5 s (tests/stalling_server.py); our open-model generator at 100 requests/s and
wrk with 10 connections load it for the same 30 s, one after the other. The schedule
implies that 10% of requests intended during the run wait more than 0.5 s and that
the 99th percentile is 0.95 s. Ours measures from each request's intended send time.
wrk (4.x, a closed loop) measures from when a connection got round to sending — a
stall holds back the requests it would have sent — and then back-fills them after the
run (`stats_correct`: samples spaced at its mean per-connection interval), an
approximate correction; tests/test_coordinated_omission.py asserts ours.

    python benchmarks/load_vs_wrk/stall.py      # needs wrk (apt-get install wrk); JSON last
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import tierlab.live
from tierlab.model import load_model

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))  # the shared loopback helpers
from loopback import wrk_totals  # noqa: E402
from stalling_server import PERIOD, STALL, StallingServer  # noqa: E402

RATE, MEASURED = 100.0, 6 * PERIOD
UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}


def ours(port: int) -> dict:
    model = load_model(ROOT / "examples" / "tpcw_2tier.yaml").with_changes(
        {
            "workload.population": {"session_rate": RATE},
            "workload.session_end": {"after_requests": 1},
            "run.duration": 1.0 + MEASURED,
            "run.warmup": 1.0,
        }
    )
    mapping = tierlab.live.load_mapping({"requests": {t: {"path": "/"} for t in model.spec.requests}})
    trace = tierlab.live.generate_load(model, mapping, target=f"127.0.0.1:{port}")
    r, rt = trace.requests, trace.summary["response_time"]
    assert r is not None and rt is not None  # a live run records every request, and the server answers them
    return {"requests": len(r), "above_0_5_s": float((r.response_time > 0.5).mean()), "p50": rt["p50"], "p90": rt["p90"], "p99": rt["p99"]}


def wrk(port: int) -> dict:
    out = subprocess.run(
        ["wrk", "-t1", "-c10", f"-d{MEASURED:g}s", "--latency", f"http://127.0.0.1:{port}/"], capture_output=True, text=True, check=True
    ).stdout
    pct = {f"p{p}": float(v) * UNITS[u] for p, v, u in re.findall(r"^\s+(50|90|99)%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)}
    return {"requests": wrk_totals(out)[0], **pct}


def main() -> None:
    if shutil.which("wrk") is None:
        sys.exit("wrk not found: apt-get install wrk")
    server = StallingServer()
    try:
        res = {"schedule": {"above_0_5_s": (STALL - 0.5) / PERIOD, "p99": STALL - 0.01 * PERIOD}, "tierlab": ours(server.port), "wrk": wrk(server.port)}
    finally:
        server.close()
    for who, m in res.items():
        print(f"{who:9s} " + "  ".join(f"{k} {v:.3g}" for k, v in m.items()))
    (Path(__file__).parent / "stall_results.json").write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
