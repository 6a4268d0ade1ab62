"""A digest of every example model's simulated results (summary, series and per-request
records) at a fixed seed and a short run, to show that an engine optimisation changed
nothing: run it before and after and compare the lines.

    python benchmarks/result_digest.py [--duration 60] [--no-records]

`--no-records` runs without per-request records (the engine's other path: no per-tier
accumulators), and adds the two models of `engine_vs_simpy.py` at 100,000 requests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import yaml
from engine_vs_simpy import ours_model

import tierlab


def digest(model: Path | dict, duration: float | None = None, records: bool = True) -> str:
    # None keeps the model's own run length.
    trace = tierlab.simulate(model, seed=7, records=records, duration=duration or None, warmup=duration / 10 if duration else None)
    h = hashlib.sha256(json.dumps(trace.summary, sort_keys=True, default=str).encode())
    h.update(trace.timeseries.to_csv(index=False).encode())
    if trace.requests is not None:
        h.update(trace.requests.to_csv(index=False).encode())
    return h.hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--no-records", dest="records", action="store_false")
    a = ap.parse_args()
    for path in sorted(Path(__file__).resolve().parent.parent.glob("examples/*.yaml")):
        if "tiers" not in yaml.safe_load(path.read_text()):
            continue  # an HTTP mapping, not a model
        print(f"{path.name:40s} {digest(path, a.duration, a.records)}")
    if not a.records:
        for case in ("mmc", "nested"):
            print(f"{'engine_vs_simpy ' + case:40s} {digest(ours_model(case, 100_000), records=False)}")


if __name__ == "__main__":
    main()
