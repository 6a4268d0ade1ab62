"""Sweeps scale: the same `tierlab size profile` sweep with 1 local worker, with 2, and
on a Dask LocalCluster of 2 single-threaded worker processes (`--scheduler`), timed end
to end as a user runs it, in one run: the three alternate for --rounds rounds and the
medians count (this shared machine's speed drifts by ±20% between minutes). Target: 2
workers ≥ 1.8× faster than 1; all write the same profile, byte for byte.

Beside them, in each round, the machine's own ceiling for this work: the sweep's pilot
runs (one sweep job per point) in one process alone, then in two processes side by
side; `machine_parallel_ceiling` = 2 × alone ÷ side by side is what two workers could
reach at best here (shared caches, memory, a host's hyperthreads), and
`speedup_of_ceiling` how much of it the sweep gets.

    python benchmarks/sweep_scaling.py [--quick] [--rounds 3]     # last line: JSON
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
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "tpcw_2tier.yaml"


def profile(out: Path, grid: tuple[str, str, str | None], *how: str) -> float:
    threads, connections, duration = grid
    cmd = [sys.executable, "-m", "tierlab.cli", "size", "profile", str(MODEL), "--out", str(out), "--threads", threads, "--connections", connections]
    if duration is not None:  # else the model's own run length
        cmd += ["--duration", duration, "--warmup", str(float(duration) / 5)]
    cmd += how
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def pilots(grid: tuple[str, str, str | None]) -> None:
    """A process of `side_by_side`: runs the grid's pilots one after another, as a
    1-worker sweep does, once its parent closes stdin; prints the seconds they took.
    With a record per request, as the profiling runs (most of the sweep's work) keep
    them, though the sweep's own pilots drop them."""
    from tierlab.experiments.sizing.profiling import grid_points, served_requests
    from tierlab.experiments.sizing.runlog import RATE
    from tierlab.model import load_model
    from tierlab.model.pools import PoolSetting
    from tierlab.run import Run, sweep

    threads, connections, duration = grid
    loaded = load_model(MODEL)
    if duration is not None:
        loaded = loaded.with_run(duration=float(duration), warmup=float(duration) / 5)
    setting, bound = PoolSetting.find(loaded), loaded.session_rate_bound()
    assert bound is not None
    points = grid_points([int(m) for m in threads.split(",")], [int(n) for n in connections.split(",")])
    runs = [Run({**setting.changes(*pt), RATE: 2 * bound}) for pt in points]
    print("ready", flush=True)
    sys.stdin.read()
    t0 = time.perf_counter()
    sweep(loaded, runs, served_requests, workers=1, progress=None)
    print(time.perf_counter() - t0, flush=True)


def side_by_side(grid: tuple[str, str, str | None], processes: int) -> float:
    """Seconds until the last of `processes` running `pilots` at once is done, timed
    from when all have started and loaded the model (start-up is not the machine's)."""
    procs = [
        subprocess.Popen([sys.executable, __file__, "--pilots", json.dumps(grid)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(processes)
    ]
    pipes = [_pipes(p) for p in procs]
    for _, stdout in pipes:
        stdout.readline()  # "ready"
    for stdin, _ in pipes:
        stdin.close()  # go
    seconds = [float(stdout.read()) for _, stdout in pipes]
    for p in procs:
        if p.wait():
            raise subprocess.CalledProcessError(p.returncode, p.args)
    return max(seconds)


def _pipes(p: subprocess.Popen[str]) -> tuple[IO[str], IO[str]]:
    """A process's stdin and stdout, both PIPE."""
    assert p.stdin is not None and p.stdout is not None
    return p.stdin, p.stdout


def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="12 points of 60 s runs instead of 24 of the model's own length")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pilots", help=argparse.SUPPRESS)  # a process of `side_by_side`: its grid
    a = ap.parse_args()
    if a.pilots:
        return pilots(tuple(json.loads(a.pilots)))
    grid = ("5,10,20", "1,2,4,5", "60") if a.quick else ("5,10,15,20,30,50", "1,2,4,5", None)
    from distributed import LocalCluster

    how = {"one": ["--workers", "1"], "two": ["--workers", "2"]}
    times: dict[str, list[float]] = {k: [] for k in ("one", "two", "dask", "alone", "side_by_side")}
    same = True
    with tempfile.TemporaryDirectory() as tmp, LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        how["dask"] = ["--scheduler", cluster.scheduler_address]
        for r in range(a.rounds):
            out = {k: Path(tmp) / f"{k}{r}" for k in how}
            for k in how:
                times[k].append(profile(out[k], grid, *how[k]))
            times["alone"].append(side_by_side(grid, 1))
            times["side_by_side"].append(side_by_side(grid, 2))
            same &= contents(out["one"]) == contents(out["two"]) == contents(out["dask"]) == contents(Path(tmp) / "one0")
    res: dict[str, Any] = {f"{k}_s": statistics.median(v) for k, v in times.items()}
    res["rounds"] = times
    res["speedup_2_workers"] = res["one_s"] / res["two_s"]
    res["speedup_dask"] = res["one_s"] / res["dask_s"]
    res["machine_parallel_ceiling"] = 2 * res["alone_s"] / res["side_by_side_s"]
    res["speedup_of_ceiling"] = res["speedup_2_workers"] / res["machine_parallel_ceiling"]
    res["identical_results"] = same
    res["grid"] = {"threads": grid[0], "connections": grid[1], "duration_s": grid[2] and float(grid[2])}
    for k, v in res.items():
        print(f"{k:20s} {v}")
    if not a.quick:
        (Path(__file__).parent / "results" / "sweep_scaling.json").write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
