"""Two builds of the engine, A and B, timed against each other on this noisy machine.

    python benchmarks/engine_ab.py A.so B.so [--pairs 40] [--case mmc|nested]

A and B are copies of `python/tierlab/_core*.so` from two builds (say, before and after
a change: `pip install -e . --no-deps`, copy, change, again). Each pair runs one fresh
process of each, in alternating order; a process loads its build by path and times three
engine calls on one million customers of `engine_vs_simpy`'s model, keeping the fastest
(the first also pays for importing numpy). The machine's speed drifts over seconds, so
the minimum over all processes estimates each build's undisturbed time and the median
its usual one; B/A below 1 means B is faster. Two processes of one build gave 0.991
(minimum) and 0.992 (median) over 40 pairs: differences of a few percent need this many.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("_core", sys.argv[1])
core = importlib.util.module_from_spec(spec); spec.loader.exec_module(core)
engine = open(sys.argv[2]).read()
times = []
for _ in range(3):
    t0 = time.perf_counter(); core.simulate(engine, None); times.append(time.perf_counter() - t0)
print(min(times))
"""


def engine_input(case: str) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from engine_vs_simpy import ours_model

    from tierlab.model import load_model

    return json.dumps(load_model(ours_model(case, 1_000_000)).with_run().engine())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", help="build A: a copy of tierlab's _core extension")
    ap.add_argument("b", help="build B")
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--case", choices=["mmc", "nested"], default="mmc")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "engine.json"
        model.write_text(engine_input(args.case))
        builds = {"A": args.a, "B": args.b}
        times: dict[str, list[float]] = {"A": [], "B": []}
        for i in range(args.pairs):
            for name in ("A", "B") if i % 2 == 0 else ("B", "A"):
                cmd = [sys.executable, "-c", CHILD, builds[name], str(model)]
                times[name].append(float(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout))
            print(f"\rpair {i + 1}/{args.pairs}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    for name, t in times.items():
        print(f"{name}: min {1e3 * min(t):.1f} ms  median {1e3 * statistics.median(t):.1f} ms  ({builds[name]})")
    a, b = times["A"], times["B"]
    print(f"B/A: min {min(b) / min(a):.3f}  median {statistics.median(b) / statistics.median(a):.3f}")


if __name__ == "__main__":
    main()
