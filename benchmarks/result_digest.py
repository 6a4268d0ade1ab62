"""A digest of every example model's simulated results (summary, series and per-request
records) at a fixed seed and a short run, to show that an engine optimisation changed
nothing: run it before and after and compare the lines.

    python benchmarks/result_digest.py [--duration 60]
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import yaml

import tierlab


def digest(path: Path, duration: float) -> str:
    trace = tierlab.simulate(path, seed=7, duration=duration, warmup=duration / 10, records=True)
    h = hashlib.sha256(json.dumps(trace.summary, sort_keys=True, default=str).encode())
    h.update(trace.timeseries.to_csv(index=False).encode())
    if trace.requests is not None:
        h.update(trace.requests.to_csv(index=False).encode())
    return h.hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=60.0)
    a = ap.parse_args()
    for path in sorted(Path(__file__).resolve().parent.parent.glob("examples/*.yaml")):
        if "tiers" not in yaml.safe_load(path.read_text()):
            continue  # an HTTP mapping, not a model
        print(f"{path.name:40s} {digest(path, a.duration)}")


if __name__ == "__main__":
    main()
