"""Step 1 of Totok & Karamcheti's method: profiling tests. For each (M, N) of a
sub-grid (M ≥ N) the system runs slightly beyond its capacity, and p_i(M, N) and
q_i(M, N) are measured per request type.

"Slightly beyond capacity" needs the capacity of every (M, N) first, so each point gets
a pilot run well beyond any capacity (twice the CPU bound of the model); its served
session rate X estimates the capacity, and the profiling run offers (1 + overload)·X.
The load structure (V_i, L) comes from one more run at half the CPU bound: overloaded
windows are not steady states, and their request/session ratio understates L."""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ...analysis.profile import request_profile
from ...analysis.tables import read_csv, read_json
from ...errors import InputError, TierlabWarning
from ...model import LoadedModel
from ...model.pools import PoolSetting
from ...model.spec import Open
from ...run.sweep import Run, Sweep
from ...trace import Trace
from ...trace.schema import sent
from ..study.inputs import as_input
from .runlog import RATE, RunLog

# The paper's profiling grid (§5.3).
PAPER_M = (5, 10, 15, 20, 30, 50)
PAPER_N = (1, 2, 4, 5, 10, 15, 20, 30, 40)
POINT_COLUMNS = ("M", "N", "type", "count", "wait_thread", "p", "wait_db", "q_active", "q_idle", "q", "db_requests", "response_time")
RUN_COLUMNS = ("M", "N", "seed", "offered", "served")
# Seconds between two writes of an incomplete profile: rebuilding it after every point
# took longer than the runs themselves on small grids and kept a second worker idle.
CHECKPOINT_EVERY = 2.0


@dataclass
class ProfileGrid:
    """p_i and q_i at each profiled (M, N), with the load structure they were taken under."""

    points: pd.DataFrame  # POINT_COLUMNS
    runs: pd.DataFrame  # RUN_COLUMNS: offered and served in sessions/s
    share: pd.Series  # profiling mix: fraction of requests per type
    L: float
    setting: PoolSetting
    model: str

    def write(self, folder: str | Path, complete: bool = True) -> Path:
        """`complete`: False while points are still being measured."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        self.points.to_csv(out / "points.csv", index=False)
        self.runs.to_csv(out / "runs.csv", index=False)
        meta = {"model": self.model, "L": self.L, "share": self.share.to_dict(), "pools": vars(self.setting), "complete": complete}
        (out / "profile.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        return out

    @classmethod
    def read(cls, folder: str | Path) -> ProfileGrid:
        folder = Path(folder)
        files = [folder / f for f in ("points.csv", "runs.csv", "profile.json")]
        if not all(f.is_file() for f in files):
            raise InputError(f"{folder} is not a profile (needs points.csv, runs.csv, profile.json); make one with `tierlab size profile MODEL --out {folder}`")
        meta = read_json(files[2], ("model", "L", "share", "pools"))
        points = read_csv(files[0], POINT_COLUMNS, dtype={"type": str})
        runs = read_csv(files[1], RUN_COLUMNS)
        try:
            share = pd.Series(meta["share"], name="share", dtype=float)
            return cls(points, runs, share, float(meta["L"]), PoolSetting(**meta["pools"]), str(meta["model"]))
        except (TypeError, ValueError) as e:
            raise InputError(f"{files[2]}: a wrong value ({e}); make the profile again") from None


def grid_points(M_values, N_values) -> list[tuple[int, int]]:
    pts = sorted({(int(m), int(n)) for m in M_values for n in N_values if m >= n >= 1})
    if not pts:
        raise InputError(f"the grid M={list(M_values)} × N={list(N_values)} has no point with M ≥ N ≥ 1")
    return pts


def served_requests(trace: Trace) -> float:
    """Requests/s served (status ok) after the warm-up."""
    return trace.summary["requests"]["ok"] / trace.summary["measured_seconds"]


class RunLengthWarning(TierlabWarning):
    """The runs are too short for what they measure."""


def _load_structure(trace: Trace) -> tuple[pd.Series, float, float]:
    """The mix, L, and the share of the sessions started in the measured window that
    also ended in it (low: the run is shorter than a session, and L too small)."""
    p, sessions = request_profile(trace), trace.summary["sessions"]
    return p.share, p.L, sessions["completed"] / max(1, sessions["started"])


def _profile_run(trace: Trace) -> tuple[pd.DataFrame, float, float]:
    """The run's phases, its served requests/s, and the share of the requests sent
    after the warm-up it did not serve (rejected, timed out, failed or unfinished)."""
    r = trace.summary["requests"]
    return request_profile(trace).phases, served_requests(trace), 1 - r["ok"] / max(1, sent(r))


def profile_grid(
    model: LoadedModel,
    M_values=PAPER_M,
    N_values=PAPER_N,
    *,
    overload: float = 0.1,
    min_rejected: float = 0.005,
    max_rounds: int = 8,
    refine: int = 0,
    seeds=(1,),
    tier: str | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    runner=None,
    bound: float | None = None,
    out_dir: str | Path | None = None,
    log: Callable[[str], None] | None = None,
) -> ProfileGrid:
    """Profile every (M, N) of the grid with M ≥ N.

    A point counts as slightly overloaded once its runs reject at least `min_rejected`
    of the requests sent (one unanswered at the end counts as rejected). A system
    that thrashes under heavy overload serves less there than
    at its capacity, so the pilot can underestimate it: until the runs reject, the
    offered rate grows by (1 + overload) per round (at most `max_rounds`; `runs.csv`
    says whether each point got there). `refine` more rounds then close in on the
    capacity: each runs at the geometric mean of the last rate that did not reject and
    the lowest that did, and the point's profile is the run at the lowest rate that
    rejected — just beyond capacity rather than up to a whole step past it (a point
    whose first round already rejects has no lower rate to refine against). At most
    1 + P·(1 + (max_rounds + refine)·seeds) runs for P points.

    `bound`: sessions/s no (M, N) can serve more of (default: the model's CPU bound);
    give it for a live system, whose demands the model's tiers need not describe.
    `runner`: execute the runs elsewhere than the simulator (see `sweep`).
    `out_dir`: the profile is written there as points are measured (every
    CHECKPOINT_EVERY seconds at most; `profile.json` says
    `"complete": false` until the last). `log`: one line per run as it ends
    (`RunLog`), in place of the progress bar."""
    loaded = model
    setting = PoolSetting.find(loaded, tier)
    bound = bound or loaded.session_rate_bound()
    if bound is None or not isinstance(loaded.spec.workload.population, Open):
        raise InputError("profiling needs an open workload (workload.population.session_rate) whose sessions end")
    # A computed figure offered as a rate is rounded first (the rounding rule, studies/README.md):
    # the bound (numpy's) and each point's first rate (pandas' L), so a library's last bit
    # cannot change the runs. The later rates are Python's own arithmetic on these.
    bound = as_input(bound)
    pts = grid_points(M_values, N_values)
    rounds = max_rounds + refine
    at_most = 1 + len(pts) * (1 + rounds * len(seeds))  # lowered as each point's chain ends
    lines = RunLog(log, setting, at_most, loaded.spec.run.duration) if log else None
    if lines:
        lines.start(f"profiling {len(pts)} points")
    # Each point's runs form a chain (pilot, then rounds at rising rates until they
    # reject), independent of the other points': a point's next run goes out as soon
    # as its own runs are back. Its rates, seeds and so its results do not depend on
    # the order the runs finish in.
    load_run = Run({RATE: bound / 2}, seeds[0])
    # A pilot's measure reads the run's summary only; without a record per request the
    # simulator does a tenth to a quarter less work and writes ~20 MB less memory, which
    # two runs side by side share. A live run joins the servers' records to the client's,
    # so keeps them.
    summary_only = {} if runner else {"run.records": False}
    pilots = {pt: Run({**setting.changes(*pt), RATE: 2 * bound, **summary_only}, seeds[0]) for pt in pts}
    load_line = lines.step("load structure", [load_run], lambda v: f"L = {v[1]:.2f} requests per session, {v[2]:.0%} of the sessions ended") if lines else None
    pilot_line = lines.step("pilot", list(pilots.values()), lambda x: f"serves {x:.2f} requests/s") if lines else None
    # The bar's total is the most runs still possible, not the runs submitted so far
    # (which grew with each round: "39/67" … "138/138").
    bar = None if lines or not progress else f"profiling {len(pts)} points, runs done / at most"
    share, L = pd.Series(dtype=float), 0.0  # until the load-structure run is back
    rate: dict[tuple[int, int], float] = {}  # each point's latest
    found: dict[tuple[int, int], list] = {}  # each point's profile: its latest round (once one rejected: its lowest rejecting round), runs by seed
    offered: dict[tuple[int, int], float] = {}  # and its rate
    served_at: dict[tuple[int, int], float] = {}  # the last rate whose runs did not reject
    refined: dict[tuple[int, int], int] = {}  # refinement rounds run, once a round rejected
    written = -CHECKPOINT_EVERY  # the first point goes to disk at once

    def checkpoint() -> None:
        nonlocal written
        if out_dir is not None and time.monotonic() - written >= CHECKPOINT_EVERY:
            _grid(found, offered, seeds, share, L, setting, loaded.spec.name, min_rejected).write(out_dir, complete=False)
            written = time.monotonic()

    with Sweep(loaded, workers=workers, scheduler=scheduler, progress=bar, runner=runner) as runs:
        runs.at_most(at_most)

        def profile(pt: tuple[int, int], round_: int) -> None:
            # Later rounds first: chains end early, not all at the end. Unchecked: the
            # pilot of the same point checked all but the rate, and the run goes out at once.
            for s in seeds:
                run = Run({**setting.changes(*pt), RATE: rate[pt]}, s)
                runs.submit(("round", pt, round_, run), run, _profile_run, priority=round_, check=False)

        # The load structure first: every point's first round needs L.
        runs.submit(("load",), load_run, _load_structure, priority=rounds + 1)
        for i, (pt, run) in enumerate(pilots.items()):
            runs.submit(("pilot", pt, i), run, served_requests)
        capacity: dict[tuple[int, int], float] = {}  # pilots back before L
        latest: dict[tuple[tuple[int, int], int], dict[int, Any]] = {}  # (point, round): seed → run
        for key, value in runs.results():
            if key[0] == "load":
                if load_line:
                    load_line(0, value)
                share, L, ended = value
                if ended < 0.5:
                    warnings.warn(
                        f"the load-structure run saw only {ended:.0%} of its sessions end: runs of {loaded.spec.run.duration:g} s are shorter than a session, "
                        f"so L = {L:.2f} requests per session is too small and every offered rate too high; make runs several sessions long (run.duration, --duration)",
                        RunLengthWarning,
                        stacklevel=2,
                    )
            elif key[0] == "pilot":
                _, pt, i = key
                if pilot_line:
                    pilot_line(i, value)
                capacity[pt] = value
            else:
                _, pt, round_, run = key
                if lines:
                    lines.ran_one(f"profiling round {round_}", run, f"{value[2]:.1%} of the requests not served")
                latest.setdefault((pt, round_), {})[run.seed] = value
                if len(latest[(pt, round_)]) < len(seeds):
                    continue
                done = latest.pop((pt, round_))
                by_seed = [done[s] for s in seeds]
                rejects = sum(r[2] for r in by_seed) / len(seeds) >= min_rejected
                if rejects or pt not in refined:
                    found[pt], offered[pt] = by_seed, rate[pt]
                    checkpoint()
                if not rejects:
                    served_at[pt] = rate[pt]
                elif pt not in refined:
                    refined[pt] = 0
                if pt not in refined and round_ < max_rounds:
                    rate[pt] *= 1 + overload
                    profile(pt, round_ + 1)
                elif pt in refined and pt in served_at and refined[pt] < refine:
                    refined[pt] += 1
                    rate[pt] = math.sqrt(served_at[pt] * offered[pt])
                    profile(pt, round_ + 1)
                else:  # the chain ends: its rounds not run are not needed
                    unneeded = (rounds - round_) * len(seeds)
                    at_most -= unneeded
                    runs.at_most(at_most)
                    if lines:
                        lines.bound(lines.remaining - unneeded)
            if L:  # start each point whose pilot is back
                for pt, x in capacity.items():
                    rate[pt] = as_input((1 + overload) * x / L)
                    profile(pt, 1)
                capacity.clear()
    grid = _grid(found, offered, seeds, share, L, setting, loaded.spec.name, min_rejected)
    if out_dir is not None:
        grid.write(out_dir)
    if lines:
        lines.end(f"profiled {len(pts)} points, {int(grid.runs['overloaded'].sum())} of {len(grid.runs)} runs overloaded,")
    return grid


def _grid(found: dict, offered: dict, seeds, share: pd.Series, L: float, setting: PoolSetting, name: str, min_rejected: float) -> ProfileGrid:
    """The profile of the points measured so far (`found`: their latest runs, by seed,
    at the session rates `offered`)."""
    rows, run_rows = [], []
    for pt in sorted(found):
        for seed, (phases, served, rejected) in zip(seeds, found[pt]):
            rows.append(phases.reset_index().assign(M=pt[0], N=pt[1]))
            run_rows.append(
                {
                    "M": pt[0],
                    "N": pt[1],
                    "seed": seed,
                    "offered": offered[pt],
                    "served": served / L,
                    "rejected": rejected,
                    "overloaded": rejected >= min_rejected,
                }
            )
    points = _pool_seeds(pd.concat(rows, ignore_index=True))
    return ProfileGrid(points, pd.DataFrame(run_rows), share, L, setting, name)


def _pool_seeds(df: pd.DataFrame) -> pd.DataFrame:
    """Count-weighted means over the seeds of each (M, N, type)."""
    value_cols = [c for c in df.columns if c not in ("M", "N", "type", "count")]
    weighted = df[value_cols].mul(df["count"], axis=0)
    weighted[["M", "N", "type", "count"]] = df[["M", "N", "type", "count"]]
    g = weighted.groupby(["M", "N", "type"], sort=True)
    out = g[value_cols].sum().div(g["count"].sum(), axis=0)
    out.insert(0, "count", g["count"].sum())
    return out.reset_index()[["M", "N", "type", "count", *value_cols]]
