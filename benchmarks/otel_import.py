"""`tierlab import otel`'s rate and memory (issue 40: ≥ 100,000 spans/s on one core,
memory flat on a file ten times larger than the fixtures).

The input is the committed fixture (tests/fixtures/otel/python_bookstore.otlp.jsonl.gz,
a 3 s run of the Python bookstore) repeated back to back — each copy with trace ids of
its own and its times shifted by the fixture's length, so the copies make one longer run
— 1×, 10× and 100× as large. Each size is imported in a fresh process pinned to one
core: the read (`otel.read`, parsing to the trace in memory) is timed inside it, by
the wall clock (`spans_per_s`) and by the process's CPU time (`spans_per_cpu_s`: on a
machine other processes share, the wall clock counts their turns too), and its peak
resident memory is the process's. `spans_per_s` and `peak_rss_mb` are the 10×
file's; the other sizes show how the memory grows (the trace keeps one record per
request: it grows with the requests, not with the file's bytes).

    python benchmarks/otel_import.py [--copies 1,10,100]     # last line: JSON
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "otel" / "python_bookstore.otlp.jsonl.gz"

CHILD = """
import json, os, resource, sys, time
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from tierlab.trace.imports import otel
t0, c0 = time.perf_counter(), time.process_time()
trace = otel.read(sys.argv[1])
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "requests": len(trace.requests), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _shift(node: object, ns: int, copy: int) -> None:
    """Shift every time of an export request by `ns` and give its ids copy `copy`'s prefix."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano") and v:
                node[k] = str(int(v) + ns)
            elif k == "traceId":
                node[k] = f"{copy:08x}{v[8:]}"
            else:
                _shift(v, ns, copy)
    elif isinstance(node, list):
        for v in node:
            _shift(v, ns, copy)


def build(copies: int, out: Path) -> int:
    """The fixture `copies` times back to back into `out`; its span count."""
    lines = [orjson.loads(line) for line in gzip.open(FIXTURE, "rb") if line.strip()]
    times = [int(s["endTimeUnixNano"]) for o in lines for rs in o.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"]]
    starts = [int(s["startTimeUnixNano"]) for o in lines for rs in o.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"]]
    length = max(times) - min(starts) + 1_000_000  # the run's length, and a millisecond between copies
    spans = 0
    with out.open("wb") as f:
        for c in range(copies):
            for o in lines:
                o = orjson.loads(orjson.dumps(o))
                _shift(o, c * length, c)
                spans += sum(len(ss["spans"]) for rs in o.get("resourceSpans", []) for ss in rs["scopeSpans"])
                f.write(orjson.dumps(o) + b"\n")
    return spans


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", default="1,10,100")
    a = ap.parse_args()
    sizes = [int(x) for x in a.copies.split(",")]
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for copies in sizes:
            path = Path(tmp) / f"otel-{copies}.jsonl"
            spans = build(copies, path)
            got = json.loads(subprocess.run([sys.executable, "-c", CHILD, str(path)], check=True, capture_output=True, text=True).stdout)
            rows[copies] = {
                "spans": spans,
                "file_mb": path.stat().st_size / 2**20,
                **got,
                "spans_per_s": spans / got["seconds"],
                "spans_per_cpu_s": spans / got["cpu_seconds"],
            }
            path.unlink()
            r = rows[copies]
            print(
                f"{copies:4d}× fixture: {r['file_mb']:8.1f} MB, {spans:9,d} spans, {r['requests']:8,d} requests: "
                f"{r['seconds']:6.2f} s ({r['cpu_seconds']:.2f} s CPU), {r['spans_per_s']:9,.0f} spans/s ({r['spans_per_cpu_s']:,.0f} per CPU-second), "
                f"peak RSS {r['peak_rss_mb']:7.1f} MB"
            )
    main_size = 10 if 10 in rows else sizes[-1]
    result = {
        "spans_per_s": round(rows[main_size]["spans_per_s"]),
        "spans_per_cpu_s": round(rows[main_size]["spans_per_cpu_s"]),
        "peak_rss_mb": round(rows[main_size]["peak_rss_mb"], 1),
        "copies": main_size,
        "sizes": {str(k): {key: round(v, 3) if isinstance(v, float) else v for key, v in r.items()} for k, r in rows.items()},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
