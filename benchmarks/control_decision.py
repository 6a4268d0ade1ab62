"""What an online controller's decision costs per interval (issue 42's target: ≤ 100 ms),
paid as `tierlab control` pays it (`experiments/control/live.py`): the interval's
observation serialised to JSON, `_core.Controller.decide` (the Rust controller of
crates/control, behind the binding: parse, decide, revert check), the sizes and the
reason back as Python objects. `static` and `gradient` side by side in one run, rounds
interleaved (each round starting with the other), every call timed on its own.

The observation is the shape a live interval gives (14 request types' mix, the response
time, both pools); Gradient2's holds alternate between 10 and 100 ms, so it runs its whole
path (a gradient under 1, the limit moving, the revert wrapper judging each change).
Ratios printed: each strategy's cost over the target (`share_of_target`: the decision's
µs ÷ 100 ms) and gradient over static (what the strategy adds to the binding's floor;
static reads nothing). The last line is the figures as JSON.

    nice -n 19 python benchmarks/control_decision.py [--decisions 20000] [--rounds 7]

Measured 2026-11-27 (two shared cores, another live measurement running at normal
priority; this at nice 19): see benchmarks/README.md, "Online control".
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from tierlab import _core

TARGET_S = 0.1
TYPES = ["HOME", "SREQ", "SRES", "NEWP", "BESS", "PROD", "SHOP", "CREG", "BUYR", "BUYC", "ORDI", "ORDD", "ADMR", "ADMC"]
SPECS = {
    "static": {"interval": 5.0, "bounds": {"threads": [2, 64], "connections": [1, 32]}, "strategy": {"strategy": "static"}},
    "gradient": {
        "interval": 5.0,
        "bounds": {"threads": [2, 64], "connections": [1, 32]},
        "strategy": {"strategy": "gradient", "smoothing": 0.2, "queue": 4.0, "tolerance": 1.5, "long_window": 120, "warmup": 10},
        "max_step": 4,
    },
}


def observation(k: int, threads: int) -> dict:
    """Interval k of a live tier: 30 threads busy, 10 waiting, holds of 10 or 100 ms."""
    acquired = 15_000.0 if k % 4 < 2 else 1_500.0
    return {
        "interval": 5.0,
        "arrivals": acquired / 5.0,
        "mix": {t: 1 / len(TYPES) for t in TYPES},
        "throughput": acquired / 5.0 * 0.99,
        "errors": acquired / 5.0 * 0.01,
        "response_time": {"mean": 0.05, "p50": 0.04, "p90": 0.09, "p99": 0.2},
        "pools": {
            "threads": {"size": threads, "busy": 30.0, "queued": 10.0, "acquired": acquired, "rejected": 0.0},
            "connections": {"size": 10, "busy": 6.0, "queued": 1.0, "acquired": acquired, "rejected": 0.0},
        },
        "cpu": None,
    }


def round_of(name: str, n: int) -> list[float]:
    """Seconds per decision, each call timed, over `n` intervals of a fresh controller."""
    c = _core.Controller(json.dumps(SPECS[name]))
    threads, out = 40, []
    for k in range(n):
        t0 = time.perf_counter()
        sizes, _reason = c.decide(json.dumps(observation(k, threads)))
        out.append(time.perf_counter() - t0)
        threads = sizes["threads"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--decisions", type=int, default=20_000, help="intervals per round")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    names = list(SPECS)
    times: dict[str, list[list[float]]] = {n: [] for n in names}
    for r in range(a.rounds):
        for name in names[r % 2 :] + names[: r % 2]:
            times[name].append(round_of(name, a.decisions))
    result: dict = {"decisions_per_round": a.decisions, "rounds": a.rounds, "target_ms": TARGET_S * 1e3}
    for name in names:
        means = [statistics.fmean(ts) for ts in times[name]]
        worst = max(max(ts) for ts in times[name])
        p99 = statistics.median(statistics.quantiles(ts, n=100)[98] for ts in times[name])
        result[name] = {
            "us_per_decision": round(statistics.median(means) * 1e6, 2),
            "p99_us": round(p99 * 1e6, 2),
            "max_us": round(worst * 1e6, 1),
            "share_of_target": statistics.median(means) / TARGET_S,
            "met": worst <= TARGET_S,
        }
    paired = [statistics.fmean(g) / statistics.fmean(s) for g, s in zip(times["gradient"], times["static"])]
    result["gradient_over_static"] = round(statistics.median(paired), 3)
    print(f"{'strategy':10} {'µs/decision':>12} {'p99 µs':>8} {'max µs':>8} {'of 100 ms':>10}")
    for name in names:
        f = result[name]
        print(f"{name:10} {f['us_per_decision']:>12.2f} {f['p99_us']:>8.2f} {f['max_us']:>8.1f} {f['share_of_target']:>10.2e}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
