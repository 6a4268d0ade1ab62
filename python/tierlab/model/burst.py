"""Bursty load as a two-state Markov-modulated Poisson process (MMPP): a burst phase
and a calm phase, each with its own arrival rate (as Mi et al., used by Wang et al.).

A 2-state MMPP with rates λ1, λ2 and phase-leaving rates r1, r2 spends π1 = r2/(r1+r2)
of the time in phase 1; its mean rate is λ̄ = π1·λ1 + π2·λ2 and the index of dispersion
of its counts (Var N(t) / E N(t) as t → ∞) is

    I = 1 + 2·π1·π2·(λ1 − λ2)² / ((r1 + r2)·λ̄).

`fit_mmpp` inverts this: given λ̄ and I, the share of time in the burst phase and the
ratio λ1/λ2 (shape choices the two moments leave free), it returns the unique MMPP."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError


@dataclass(frozen=True)
class Mmpp:
    rates: tuple[float, float]
    """λ1 (burst phase), λ2 (calm phase): arrivals per second."""
    leave: tuple[float, float]
    """r1, r2: rates of leaving the burst and the calm phase, per second."""

    @property
    def burst_share(self) -> float:
        return self.leave[1] / (self.leave[0] + self.leave[1])

    @property
    def mean_rate(self) -> float:
        p = self.burst_share
        return p * self.rates[0] + (1 - p) * self.rates[1]

    @property
    def dispersion(self) -> float:
        p = self.burst_share
        return 1 + 2 * p * (1 - p) * (self.rates[0] - self.rates[1]) ** 2 / (sum(self.leave) * self.mean_rate)


def fit_mmpp(mean_rate: float, dispersion: float, burst_share: float = 0.1, ratio: float = 10.0) -> Mmpp:
    """The MMPP with mean rate `mean_rate`, index of dispersion `dispersion` (> 1), a
    burst phase taking `burst_share` of the time at `ratio` times the calm rate."""
    if not mean_rate > 0:
        raise InputError(f"mean_rate = {mean_rate}: must be > 0")
    if not dispersion > 1:
        raise InputError(f"dispersion I = {dispersion}: an MMPP needs I > 1 (I = 1 is Poisson: no modulation)")
    if not 0 < burst_share < 1:
        raise InputError(f"burst_share = {burst_share}: must be in (0, 1)")
    if not ratio > 1:
        raise InputError(f"ratio = {ratio}: the burst rate must exceed the calm rate (ratio > 1)")
    p = burst_share
    calm = mean_rate / (p * ratio + 1 - p)
    burst = ratio * calm
    total = 2 * p * (1 - p) * (burst - calm) ** 2 / ((dispersion - 1) * mean_rate)
    return Mmpp(rates=(burst, calm), leave=((1 - p) * total, p * total))


def dispersion_of_counts(times: np.ndarray, window: float, span: tuple[float, float] | None = None) -> float:
    """Var/mean of the number of events per window of length `window` over `span`
    (default: from the first to the last event): the measured index of dispersion
    (it approaches I when the window is long against the phase durations)."""
    times = np.asarray(times, dtype=float)
    lo, hi = span if span is not None else (times.min(), times.max())
    edges = np.arange(lo, hi - window / 2, window)
    counts, _ = np.histogram(times, bins=np.append(edges, edges[-1] + window))
    return float(counts.var(ddof=1) / counts.mean())
