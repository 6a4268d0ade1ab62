"""The interpreter lock, live and in the model (issue 41 item 3): N Python threads in one
process, each looping a CPU-bound step (pure Python: it needs the lock) then an
I/O-like wait (time.sleep: it releases the lock), against the model of the same — a
closed population of N clients thinking the wait, each request one CPU step on one
core under `interpreter_lock` — throughput (steps per second) and the step's latency
(its wall time, lock waits included) against N.

    python investigations/twin/gil_microbench.py [--threads 1,2,4,8] [--work 0.004] [--wait 0.004] [--seconds 10] [--handoff 0]

The step and the sleep are measured alone first (one thread: their wall times, the
model's work and think); the model then runs with them, CPython's switch interval
(`sys.getswitchinterval()`) and `--handoff`. On a machine shared with other load the
live figures measure that load too: run it quiet. It prints one JSON line per N and
writes nothing else; its results are not committed yet (issue 41: to be run on a quiet
machine, and the hand-off fitted from it by `twin calibrate` later)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time

import tierlab


def burn(loops: int) -> None:
    x = 0
    for i in range(loops):
        x += i * i


def loops_for(seconds: float) -> int:
    """Loops of `burn` that take `seconds` of one thread's CPU here, now."""
    n = 10_000
    while True:
        t0 = time.thread_time()
        burn(n)
        took = time.thread_time() - t0
        if took > 0.05:
            return max(1, round(n * seconds / took))
        n *= 2


def live(threads: int, loops: int, wait: float, seconds: float) -> dict[str, float]:
    """N threads looping burn(loops) then sleep(wait) for `seconds`: steps per second,
    the mean wall time of a step and of a wait (a sleep overshoots; after it the thread
    must take the lock back)."""
    stop = time.monotonic() + seconds
    steps: list[list[float]] = [[] for _ in range(threads)]
    waits: list[list[float]] = [[] for _ in range(threads)]

    def worker(k: int) -> None:
        while time.monotonic() < stop:
            t0 = time.monotonic()
            burn(loops)
            t1 = time.monotonic()
            steps[k].append(t1 - t0)
            time.sleep(wait)
            waits[k].append(time.monotonic() - t1)

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    done, slept = [s for per in steps for s in per], [w for per in waits for w in per]
    return {
        "throughput": len(done) / seconds,
        "step_mean": statistics.fmean(done) if done else float("nan"),
        "wait_mean": statistics.fmean(slept) if slept else float("nan"),
    }


def model(threads: int, work: float, wait: float, seconds: float, handoff: float) -> dict[str, float]:
    """The same on the simulator: a closed population thinking `wait`, one CPU step of
    `work` on one core under the interpreter lock."""
    spec = {
        "run": {"duration": seconds, "warmup": min(1.0, seconds / 10), "records": False, "seed": 1},
        "tiers": {
            "app": {"interpreter_lock": {"switch_interval": sys.getswitchinterval(), "handoff": handoff}, "stations": {"cpu": {"kind": "cpu", "cores": 1}}}
        },
        "requests": {"step": {"app": [{"cpu": {"constant": work}}]}},
        "workload": {"population": {"clients": threads}, "think": {"constant": wait}, "chain": {"matrix": {"step": {"step": 1}}, "start": "step"}},
    }
    s = tierlab.simulate(spec).summary
    return {"throughput": s["throughput"], "step_mean": (s["response_time"] or {}).get("mean", float("nan"))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2,4,8")
    ap.add_argument("--work", type=float, default=0.004, help="seconds of CPU per step (alone)")
    ap.add_argument("--wait", type=float, default=0.004, help="seconds of sleep after each step")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--handoff", type=float, default=0.0, help="the model's seconds per change of holder")
    a = ap.parse_args()
    loops = loops_for(a.work)
    # One thread alone: the step's and the sleep's wall times are the model's work and think.
    alone = live(1, loops, a.wait, 2.0)
    for n in (int(x) for x in a.threads.split(",")):
        seen, predicted = live(n, loops, a.wait, a.seconds), model(n, alone["step_mean"], alone["wait_mean"], a.seconds, a.handoff)
        print(json.dumps({"threads": n, "alone": alone, "live": seen, "model": predicted}))


if __name__ == "__main__":
    main()
