"""The measured maximum sustainable session throughput, as Totok & Karamcheti define it
(§5.3): the largest session arrival rate λ, on a grid of `step` (0.05), at which at
least 60% of the runs serve 100% of their requests (no rejection, time-out or error
after the warm-up, and no backlog: at most `outcome.UNFINISHED_SHARE` of the requests
sent still unanswered at the end — a run whose server falls behind may reject
nothing while the requests it has not answered pile up).

The search starts at a guess (the method's prediction), brackets the boundary with
strides that double, then bisects the grid. Every configuration being searched advances one
step per round, and a round is one sweep, so all cores stay busy. Each rate is tried
with the same seeds (common random numbers), which keeps neighbouring rates and
configurations comparable. At most `max_rounds` rounds: a search still open then (its
boundary beyond the last rate that passed) reports that rate, flagged not bracketed."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pandas as pd

from ...errors import InputError
from ...model import LoadedModel
from ...model.pools import PoolSetting
from ...run.sweep import Run, sweep
from ...trace import Trace
from ...trace.outcome import backlogged, unfinished_share
from .runlog import RATE, RunLog


def servers_needed(session_rate: float, per_server: float) -> int:
    """Servers, each sustaining `per_server` sessions/s, that a session arrival rate needs."""
    if per_server <= 0:
        raise InputError("no configuration sustains any load, so no number of servers serves the rate; try larger pools")
    return math.ceil(session_rate / per_server - 1e-12)


def all_served(trace: Trace) -> bool:
    """The run served every request sent after the warm-up: none rejected, timed out
    or failed, and no more than `UNFINISHED_SHARE` of them unanswered at the end."""
    r = trace.summary["requests"]
    return r["ok"] > 0 and r["rejected"] + r["timeout"] + r["error"] == 0 and not backlogged(r)


def _verdict(tier: str, trace: Trace) -> tuple[bool, str]:
    """`all_served`, and for the log what the run did not serve, with each pool of `tier`
    whose waits timed out (the search keeps no trace of its runs)."""
    r = trace.summary["requests"]
    timed_out: dict[str, int] = {}
    for server in trace.summary["tiers"][tier]["servers"]:
        for p, v in server["pools"].items():
            timed_out[p] = timed_out.get(p, 0) + v["timed_out"]
    waits = ", ".join(f"{p} {n}" for p, n in timed_out.items() if n)
    unfinished = f"{r['unfinished']} unfinished ({unfinished_share(r):.1%} of those sent)"
    return all_served(trace), f"{r['ok']} served, {r['rejected']} rejected, {r['timeout']} timed out, {r['error']} errors, {unfinished}" + (
        f"; waits timed out: {waits}" if waits else ""
    )


@dataclass
class _Search:
    """Bracket, then bisect, the boundary on the rate grid (rates in steps of
    step / `scale`); with a `tolerance`, a bracket one grid step wide but wider than
    `tolerance` × the rate that passed is bisected further on a grid twice as fine."""

    M: int
    N: int
    at: int  # next rate to try
    passed: int | None = None  # highest rate known to pass
    failed: int | None = None  # lowest rate known to fail
    stride: int = 1
    tolerance: float | None = None
    scale: int = 1  # grid steps per `step`

    def record(self, ok: bool) -> None:
        if ok:
            self.passed = self.at if self.passed is None else max(self.passed, self.at)
        else:
            self.failed = self.at if self.failed is None else min(self.failed, self.at)
        if self.passed is not None and self.failed is not None:
            self.at = (self.passed + self.failed) // 2
        else:  # still bracketing: double the stride away from the known side
            # Downwards at most to half the rate: a stride past it would land on the
            # grid's first step, a rate with no evidence in it (live_sizing, 2026-11-28:
            # 1.0 → 0.028 sessions/s, where a 30 s run often sends no request at all).
            self.at = self.at + self.stride if ok else max(1, self.at - self.stride, (self.at + 1) // 2)
            self.stride *= 2
        if self._bracketed and not self.done:  # a finer grid: its new midpoint next
            assert self.passed is not None and self.failed is not None
            self.passed, self.failed, self.scale = 2 * self.passed, 2 * self.failed, 2 * self.scale
            self.at = self.passed + 1

    @property
    def _bracketed(self) -> bool:
        if self.passed is None:
            return self.failed == 1  # even the lowest rate of the grid fails
        return self.failed is not None and self.failed == self.passed + 1

    @property
    def done(self) -> bool:
        if not self._bracketed or self.tolerance is None or self.passed is None:
            return self._bracketed
        return self.failed is not None and self.failed - self.passed <= self.tolerance * self.passed


def _next_runs(served: list[bool], runs: int, success: float, decided: bool) -> int:
    """How many more runs a rate needs before its verdict (at least `success` × `runs`
    of them serve every request): all that are left, or — `decided` — the fewest that
    could settle it either way, 0 once it is settled."""
    left = runs - len(served)
    if not decided:
        return left
    need = math.ceil(success * runs - 1e-9)  # passes that sustain the rate
    passes, fails = sum(served), len(served) - sum(served)
    if passes >= need or fails > runs - need:
        return 0
    return min(left, need - passes, runs - need + 1 - fails)


def max_sustainable_rate(
    model: LoadedModel,
    configs: list[tuple[int, int]],
    start: dict[tuple[int, int], float] | float,
    *,
    step: float = 0.05,
    runs: int = 5,
    success: float = 0.6,
    tier: str | None = None,
    extra: dict | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    runner=None,
    max_rounds: int = 12,
    log: Callable[[str], None] | None = None,
    decided: bool = False,
    tolerance: float | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Returns (result: M, N, lambda_max, bracketed; trials: M, N, lambda, passed_runs,
    runs, passed). `extra` holds further model changes applied to every run (e.g. a
    mix); `runner` executes the runs elsewhere than the simulator (see `sweep`). At
    most `max_rounds` × runs × configurations runs; `log`: one line per run as it ends
    (`RunLog`), in place of the progress bar. `decided`: a rate's runs stop once its
    verdict cannot change (with 5 runs and 60%, after 3 passes or 3 failures; seeds in
    order, so the verdicts are the same, the trials' `runs` fewer) — for live runs,
    each as long as the run. `tolerance`: once bracketed on the grid, bisect further
    until the bracket is at most `tolerance` × λ_max (0.01: the boundary within 1%;
    each halving of the grid one more round, within `max_rounds`)."""
    loaded = model
    setting = PoolSetting.find(loaded, tier)
    guess = start if isinstance(start, dict) else {c: start for c in configs}
    searches = [_Search(M, N, max(1, round(guess[(M, N)] / step)), tolerance=tolerance) for M, N in dict.fromkeys(configs)]
    trials = []
    rounds = 0
    lines = RunLog(log, setting, max_rounds * runs * len(searches), loaded.spec.run.duration) if log else None
    if lines:
        lines.start(f"capacity search of {len(searches)} configuration{'' if len(searches) == 1 else 's'}")
    while (active := [s for s in searches if not s.done]) and rounds < max_rounds:
        rounds += 1
        served: dict[int, list[bool]] = {i: [] for i in range(len(active))}
        while batch := [(i, len(served[i]) + k + 1) for i in served for k in range(_next_runs(served[i], runs, success, decided))]:
            planned = [
                Run({**(extra or {}), **setting.changes(active[i].M, active[i].N), RATE: active[i].at * step / active[i].scale}, seed) for i, seed in batch
            ]
            outcome = sweep(
                loaded,
                planned,
                partial(_verdict, setting.tier),
                workers=workers,
                scheduler=scheduler,
                runner=runner,
                progress=f"capacity search, round {rounds} ({len(active)} configurations)" if progress and not lines else None,
                on_result=lines.step(f"capacity search round {rounds}", planned, lambda v: f"{'all served' if v[0] else 'not all served'} ({v[1]})")
                if lines
                else None,
            )
            for (i, _), (ok, _) in zip(batch, outcome):
                served[i].append(ok)
        for i, s in enumerate(active):
            ok = sum(served[i])
            passed = ok >= success * runs
            rate = s.at * step / s.scale
            trials.append({"M": s.M, "N": s.N, "lambda": round(rate, 10), "passed_runs": ok, "runs": len(served[i]), "passed": passed})
            s.record(passed)
            if lines:
                verdict = "sustained" if passed else "not sustained"
                lines.log(
                    f"capacity search round {rounds}: M={s.M} N={s.N} at {rate:.3f} sessions/s: {ok} of {len(served[i])} runs served all, {verdict}; "
                    + (f"λ_max = {(s.passed or 0) * step / s.scale:.3f} sessions/s" if s.done else f"next {s.at * step / s.scale:.3f} sessions/s")
                )
        if lines:
            lines.bound((max_rounds - rounds) * runs * sum(not s.done for s in searches))
    result = pd.DataFrame([{"M": s.M, "N": s.N, "lambda_max": round((s.passed or 0) * step / s.scale, 10), "bracketed": s.done} for s in searches])
    if lines:
        open_ = sum(not s.done for s in searches)
        lines.end(f"capacity search done ({open_} of {len(searches)} not bracketed within {max_rounds} rounds)" if open_ else "capacity search done")
    return result, pd.DataFrame(trials)
