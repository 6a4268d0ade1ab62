"""What a user waits for besides the engine: `import tierlab`, `tierlab --help`, and a
small simulation end to end (`tierlab simulate examples/tpcw_2tier.yaml`) beside the
engine's own share of it. Medians of --rounds runs, each in a fresh process.

    python benchmarks/startup.py [--rounds 5]     # last line: JSON
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "tpcw_2tier.yaml"


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def engine_seconds() -> float:
    """The engine call alone, in this (warm) process."""
    from tierlab import _core
    from tierlab.model import load_model

    engine = json.dumps(load_model(MODEL).engine())
    t0 = time.perf_counter()
    _core.simulate(engine, None)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as out:
        cases = {
            "python_s": [py, "-c", "pass"],
            "import_tierlab_s": [py, "-c", "import tierlab"],
            "help_s": [py, "-m", "tierlab.cli", "--help"],
            "simulate_small_s": [py, "-m", "tierlab.cli", "simulate", str(MODEL), "--out", out, "--quiet"],
        }
        res = {k: statistics.median(wall(c) for _ in range(a.rounds)) for k, c in cases.items()}
    res["engine_small_s"] = statistics.median(engine_seconds() for _ in range(a.rounds))
    for k, v in res.items():
        print(f"{k:20s} {v:.3f}")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
