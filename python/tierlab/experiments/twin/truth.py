"""The live truth the twin is scored against, with its error bar (issue 41 item 2): a
figure — throughput, mean response time, the maximum sustainable session throughput
λ_max — is the mean of at least `MIN_REPEATS` repeats, taken interleaved across the
configurations (A B C A B C …, so that a drift of the machine spreads over all of them
instead of landing on one), each brought to one machine speed by the monitor's probe,
and reported with its 95% Student-t interval. λ_max is searched by bisection to
`CAPACITY_TOLERANCE` of itself (`max_sustainable_rate(tolerance=)`).

The speed: every live run's monitor times a fixed piece of Python work
(`cpu_probe_ms`, analysis.machine). As `twin verify` runs its twin at
calibration probe ÷ step probe, a repeat's figure is brought to the reference probe as
a CPU-bound system's would be: a rate (λ_max) × step probe ÷ reference, a time (mean
response time) × reference ÷ step probe; a throughput below capacity is the offered
load's and is not scaled. A first-order correction — exact for a saturated CPU, not
for queueing in between — kept beside the raw figures (`raw_*`), so the two can be
compared; a λ_max another resource sets (the clients' connections) is not scaled
(`summarized(not_cpu_bound=)`)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import pandas as pd
from scipy import stats

from ...analysis.machine import machine
from ...errors import InputError
from ...model import LoadedModel
from ...trace import Trace
from ..sizing.validation import max_sustainable_rate

MIN_REPEATS = 3
CONFIDENCE = 0.95
CAPACITY_TOLERANCE = 0.01  # λ_max's bracket at most 1% of itself
# How a figure moves with the machine's speed: the power of (step probe ÷ reference).
SPEED_POWER = {"lambda_max": 1.0, "rt_mean": -1.0, "throughput": 0.0}

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Estimate:
    """The mean of repeated measurements and its `CONFIDENCE` Student-t half-width."""

    values: tuple[float, ...]
    mean: float
    halfwidth: float

    @property
    def relative(self) -> float:
        """The half-width as a share of the mean (NaN for a zero mean)."""
        return self.halfwidth / abs(self.mean) if self.mean else float("nan")


def estimate(values: Sequence[float], confidence: float = CONFIDENCE) -> Estimate:
    """`values`' mean and its t-interval's half-width: t(1 − (1 − c)/2, n − 1) · s / √n."""
    if len(values) < 2:
        raise InputError(f"an interval needs two repeats or more, got {len(values)}")
    n = len(values)
    t = float(stats.t.ppf(1 - (1 - confidence) / 2, n - 1))
    return Estimate(tuple(values), statistics.fmean(values), t * statistics.stdev(values) / math.sqrt(n))


def allowance(target: float, relative_halfwidth: float) -> float:
    """The relative error a prediction may have against a truth: the target, or the
    truth's own relative 95% half-width where that is wider (issue 41: a truth cannot
    judge more finely than it resolves, and the note says where this happened)."""
    return max(target, relative_halfwidth) if math.isfinite(relative_halfwidth) else target


def beyond_allowance(errors: Iterable[float], relative_halfwidths: Iterable[float], target: float) -> float:
    """The largest |error| less its point's allowance (`allowance`): ≤ 0 where every
    point meets its target."""
    return float(max(abs(e) - allowance(target, h) for e, h in zip(errors, relative_halfwidths)))


def interleaved(configs: Sequence[K], repeats: int) -> list[tuple[int, K]]:
    """(repeat, configuration) in the order to measure them: A B C A B C …"""
    if repeats < MIN_REPEATS:
        raise InputError(f"repeats: at least {MIN_REPEATS} for an interval worth scoring against, got {repeats}")
    if len(set(configs)) != len(configs):
        raise InputError(f"a configuration is given twice in {list(configs)}")
    return [(k, c) for k in range(1, repeats + 1) for c in configs]


def at_speed(figure: str, value: float, probe: float | None, reference: float | None) -> float:
    """`value` brought from a run at `probe` ms to the `reference` probe (`SPEED_POWER`);
    unchanged where either probe is unknown."""
    if probe is None or reference is None or not (probe > 0 and reference > 0):
        return value
    return value * (probe / reference) ** SPEED_POWER[figure]


class Probed:
    """A runner (`LiveRunner`, or any model → trace) that keeps the machine's probe of
    every run it makes (`cpu_probe_ms`: None where the trace has none)."""

    def __init__(self, runner: Callable[[LoadedModel], Trace]):
        self.runner, self.probes = runner, list[float | None]()

    def __call__(self, model: LoadedModel) -> Trace:
        trace = self.runner(model)
        self.probes.append(machine([trace])["cpu_probe_ms"])
        return trace

    def take(self) -> float | None:
        """The median probe of the runs since the last `take` (None if none had one)."""
        seen = [p for p in self.probes if p is not None]
        self.probes = []
        return statistics.median(seen) if seen else None


def measure(
    configs: Sequence[K],
    run: Callable[[K], dict[str, float]],
    runner: Probed,
    repeats: int = MIN_REPEATS,
    reference: float | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every configuration measured `repeats` times, interleaved; `run(config)` returns
    its figures (keys of `SPEED_POWER`) from runs made through `runner`. Returns
    (repeats: repeat, config, probe_ms, each figure raw and at the reference speed;
    truth: per configuration and figure the mean, its half-width and relative
    half-width, raw and at speed). `reference`: the probe to scale to (a twin's
    calibration probe); default the median of all repeats'."""
    rows = []
    for k, config in interleaved(configs, repeats):
        figures = run(config)
        probe = runner.take()
        rows.append({"repeat": k, "config": config, "probe_ms": probe} | {f"raw_{f}": v for f, v in figures.items()})
        log(f"repeat {k} of {repeats}, {config}: " + ", ".join(f"{f} {v:.4g}" for f, v in figures.items()) + (f" (probe {probe:.3f} ms)" if probe else ""))
    return summarized(pd.DataFrame(rows), configs, reference)


def summarized(
    table: pd.DataFrame, configs: Sequence[K], reference: float | None = None, not_cpu_bound: Collection[K] = ()
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`measure`'s two tables from its repeats' rows (repeat, config, probe_ms, raw_*):
    each figure brought to the `reference` probe (default the median of the repeats'),
    then per configuration its mean and interval. Apart from `measure` so that a study
    resuming from repeats it kept (a CSV) scores them as if just run.

    `not_cpu_bound`: configurations whose λ_max a resource other than the CPU sets (the
    server's clients' connections, held through the sessions' thinks): the machine's
    speed does not move it, so it is taken as measured. (Scaled, a probe read slow
    while the capacity stood still made such a truth look 20–40% wide: the JVM's in
    studies/results/twin_java_budget_quick, 2026-11-28.)"""
    table = table.copy()
    probes = table["probe_ms"].dropna()
    ref = reference if reference is not None else (float(probes.median()) if len(probes) else None)
    names = [c.removeprefix("raw_") for c in table.columns if c.startswith("raw_")]
    for f in names:
        table[f] = [
            v if f == "lambda_max" and c in not_cpu_bound else at_speed(f, v, p if pd.notna(p) else None, ref)
            for v, p, c in zip(table[f"raw_{f}"], table["probe_ms"], table["config"])
        ]
    truth = []
    for config in configs:
        mine = table[[c == config for c in table["config"]]]
        for f in names:
            scaled, raw = estimate(mine[f].tolist()), estimate(mine[f"raw_{f}"].tolist())
            truth.append(
                {
                    "config": config,
                    "figure": f,
                    "mean": scaled.mean,
                    "halfwidth": scaled.halfwidth,
                    "relative": scaled.relative,
                    "raw_mean": raw.mean,
                    "raw_relative": raw.relative,
                    "repeats": len(mine),
                    "reference_probe_ms": ref,
                }
            )
    return table, pd.DataFrame(truth)


def capacity(
    model: LoadedModel,
    configs: Sequence[tuple[int, int]],
    runner: Callable[[LoadedModel], Trace],
    start: float | dict[tuple[int, int], float],
    step: float,
    runs: int,
    repeats: int = MIN_REPEATS,
    reference: float | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """λ_max of every (M, N) `repeats` times, interleaved, each a search of its own
    bisected to `CAPACITY_TOLERANCE` (`max_sustainable_rate` on `runner`, from `start`:
    one rate, or one per configuration): `measure`'s tables, figure `lambda_max`."""
    probed = Probed(runner)

    def search(config: tuple[int, int]) -> dict[str, float]:
        found, _ = max_sustainable_rate(
            model, [config], start, step=step, runs=runs, runner=probed, tolerance=CAPACITY_TOLERANCE, max_rounds=24, progress=False, decided=True
        )
        if not found.bracketed[0]:
            log(f"{config}: the search did not bracket its boundary within its rounds; its λ_max is the last rate that passed")
        return {"lambda_max": float(found.lambda_max[0])}

    return measure(configs, search, probed, repeats, reference, log)
