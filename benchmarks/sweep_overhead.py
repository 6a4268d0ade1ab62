"""What a sweep costs beyond its simulations: `tierlab size profile
examples/tpcw_2tier.yaml` (the README's command: 138 runs) timed as a user runs it, a
fresh process from start to exit, against the sum of its engine calls' own times,
measured in the same run (issue 43). The command runs in a child process that wraps
the engine call (`tierlab.run.simulate.run_engine`) with a timer before the sweep's
workers fork, so every worker adds its calls' seconds to one shared counter.

    overhead_ratio = wall_s / engine_s

With W workers, a sweep with no overhead at all would reach 1/W (the engine calls
overlap); everything above is model loading, validation, compilation, process
hand-offs, the profile's analysis and writing it. Target: overhead_ratio ≤ 1.5 with
the command's default workers (one per core). `--workers 1` shows the serial
overhead alone (1.0 = none).

    python benchmarks/sweep_overhead.py [--workers N] [--threads 5,10 --connections 2,5]   # last line: JSON
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "tpcw_2tier.yaml"


def child(out: Path, engine_file: Path, extra: list[str]) -> None:
    """Run the command in this process, its engine calls timed into one counter shared
    with the workers it forks; write the counter's total and the calls to `engine_file`."""
    from tierlab.cli import cli

    sim = importlib.import_module("tierlab.run.simulate")  # the module (tierlab.run.simulate is also its function's name)

    ctx = multiprocessing.get_context("fork")
    seconds, calls = ctx.Value("d", 0.0), ctx.Value("q", 0)
    real = sim.run_engine

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            with seconds.get_lock():
                seconds.value += time.perf_counter() - t0
                calls.value += 1

    try:
        with mock.patch.object(sim, "run_engine", timed):
            cli.main(["size", "profile", str(MODEL), "--out", str(out), *extra], standalone_mode=False)
    finally:
        engine_file.write_text(json.dumps({"engine_s": seconds.value, "calls": calls.value}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, help="the sweep's local workers (default: the command's, one per core)")
    ap.add_argument("--threads", help="M values (default: the command's grid)")
    ap.add_argument("--connections", help="N values (default: the command's grid)")
    ap.add_argument("--child", nargs=2, metavar=("OUT", "ENGINE_FILE"), help=argparse.SUPPRESS)
    a, rest = ap.parse_known_args()
    extra = rest + [f"--{k}={v}" for k, v in (("workers", a.workers), ("threads", a.threads), ("connections", a.connections)) if v is not None]
    if a.child:
        child(Path(a.child[0]), Path(a.child[1]), extra)
        return
    with tempfile.TemporaryDirectory() as tmp:
        engine_file = Path(tmp) / "engine.json"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--child", str(Path(tmp) / "profile"), str(engine_file), *extra], check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        engine = json.loads(engine_file.read_text())
    workers = a.workers or os.cpu_count() or 1
    print(
        json.dumps(
            {
                "command": "tierlab size profile examples/tpcw_2tier.yaml " + " ".join(extra),
                "workers": workers,
                "runs": engine["calls"],
                "wall_s": round(wall, 2),
                "engine_s": round(engine["engine_s"], 2),
                "overhead_ratio": round(wall / engine["engine_s"], 3),
                "no_overhead_ratio": round(1 / min(workers, engine["calls"]), 3),
                "target": 1.5,
            }
        )
    )


if __name__ == "__main__":
    main()
