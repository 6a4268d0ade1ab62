"""The interpreter lock in a twin (issue 41 item 3): whether the traces show one, and
its hand-off cost, for `calibrate(lock=True)`; docs/twin.md, "The interpreter lock,
found from the traces", is the account of why these figures.

What a trace has that shows a lock: the process's CPU (the monitor's, or a simulated
station's) in the windows where two or more requests were computing at once. A
process free to use the two or more cores its model gives it uses more than one
there; one whose threads share one lock stays at one core, plus whatever runs
outside the lock (on SQLite its statements: 1.11 cores on a quiet machine). What the
trace does not have is the lock's own clock: its hand-offs are seen only as the
process's CPU per request growing with the load beyond what its requests' own CPU
does, which is why the hand-off is fitted by simulation at two loads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .measured import Measured

ONE_CORE = 1.5  # cores: below this, 2+ requests computing on 2+ cores share one lock (no lock: up to 2)
SWITCH_INTERVAL = 0.005  # CPython's default sys.getswitchinterval(); the servers here leave it
# Seconds: the fit's first try, small enough not to saturate a twin whose requests hand
# the lock over 60 times each (the bookstore's Search: 101 connection requests).
FIRST_HANDOFF = 1e-5
LOCK_ROUNDS = 3  # of simulating the twin at the traces' loads to size the hand-off
STEP_SHARE = 0.02  # of the CPU per request: the least CPU outside the handlers a fit with that step runs
MATCHED = 0.02  # a fit with no CPU outside the handlers that meets every trace's CPU per request this near is kept
PROBE, PROBE_STEPS = 0.5, 8  # a hand-off to read k at: its effect at least half the CPU to explain; tripled at most this often
SEPARABLE = 0.2  # the hand-offs per request must differ by this share between the loads to tell them from a constant CPU


def at_cpu(m: Measured, connections: str) -> pd.Series:
    """Per window, the requests computing (at the CPU, or waiting for it): those at the
    server less those waiting for a pool — but for the woken waiters handing off, who
    run — less those in a call to a database of its own (the connections held × the
    share of their holding spent in calls; none for an embedded database, whose
    statements run on the app's CPU)."""
    w, r = m.windows, m.requests
    pools = list(m.pools)
    n = w["concurrency"] - sum(w[f"queued:{p}"] for p in pools) + sum(w[f"handing_off:{p}"] for p in pools)
    if m.db_tier is not None:
        held = (r[f"{m.tier}.with_db_active"] + r[f"{m.tier}.with_db_idle"]).sum()
        n = n - w[f"busy:{connections}"] * (r[f"{m.tier}.db_time"].sum() / held if held > 0 else 0.0)
    return n


@dataclass(frozen=True)
class Evidence:
    """What the traces say of a lock: the model's cores for the tier (room for a second
    one to show), the windows with 2+ requests computing (`needed` of them at least),
    and the process's CPU there (its ceiling, as `effective_cores` reads one; NaN
    without windows)."""

    cores: int
    windows: int
    needed: int
    ceiling: float

    @property
    def present(self) -> bool:
        return self.cores >= 2 and self.windows >= self.needed and self.ceiling < ONE_CORE

    def note(self) -> str:
        if self.cores < 2:
            return (
                f"interpreter lock: not looked for — the model (or the tier's CPU budget) gives the tier {self.cores} whole core(s), "
                "where a lock and a core look alike"
            )
        if self.windows < self.needed:
            return f"interpreter lock: not seen — {self.windows} windows with 2+ requests computing ({self.needed} needed); calibrate from a busier run"
        verdict = "present" if self.present else "absent"
        return (
            f"interpreter lock: {verdict} — with 2+ requests computing ({self.windows} windows) the process used {self.ceiling:.2f} cores "
            f"(its ceiling) of the {self.cores} the model gives it (below {ONE_CORE:g}: one lock)"
        )


def evidence(m: Measured, cores: int, connections: str, needed: int, quantile: float) -> Evidence:
    """`Evidence` from the traces' windows; `cores` the tier's whole cores (its CPU
    station's in the model, or its CPU budget's if fewer); `needed` and `quantile` as
    `effective_cores` reads a ceiling (calibrate's BUSY_WINDOWS, CEILING_QUANTILE)."""
    w = m.windows
    busy = w[at_cpu(m, connections) >= 2.0 - 1e-9]
    return Evidence(cores, len(busy), needed, float(np.quantile(busy["cpu"], quantile)) if len(busy) else float("nan"))


@dataclass(frozen=True)
class Lock:
    """The twin's lock: `switch_interval` and `handoff` (seconds) as the model's
    `interpreter_lock` has them, and the CPU per request outside the handlers fitted with
    the hand-off (`outside`; None: the service demand law's residual, as without a lock)."""

    switch_interval: float = SWITCH_INTERVAL
    handoff: float = 0.0
    outside: float | None = None

    def spec(self) -> dict[str, float]:
        return {"switch_interval": self.switch_interval, "handoff": self.handoff}


@dataclass(frozen=True)
class Fit:
    """The fitted lock and, per trace, its load's CPU per request live and in the twin,
    and the hand-offs per request the twin makes there (`per_request`)."""

    lock: Lock
    separable: bool  # the loads' hand-offs per request differ enough to tell them from a constant CPU
    live: list[float]
    twin: list[float]
    per_request: list[float]


def fitted(cpu: Callable[[Lock], np.ndarray], live: np.ndarray, outside: float) -> Fit:
    """The hand-off h and the CPU outside the handlers o that make the twin's CPU per
    request at each trace's load (`cpu(lock)`: the twin under `lock`, simulated there)
    the traces' `live` one. The twin's own demands d (its CPU with no hand-off) plus o
    plus k · h, k its hand-offs per request at that load (read from a run with h:
    (with − without) ÷ h), must be `live`: least squares over the traces, o and h at
    least 0, a few rounds (k depends on h and o through the queueing). A lock stretches
    the CPU per request only where it is contended, so two loads that contend it
    differently tell h from o; where they do not (one trace, or k within SEPARABLE of
    each other), h is 0 and o the service demand law's residual (`outside`), as without
    the lock.

    The CPU outside the handlers is a step of its own before the worker thread, and
    under the lock every step may wait for it and hand it over: a step of any size adds
    hand-offs, so two fits — with no such step, or with one in every run — can both go
    through two loads. The simpler one is kept where it matches every trace's CPU per
    request within MATCHED; else o is fitted with the step (at least `STEP_SHARE` of
    the CPU per request in every run, so that the step stays what the line saw)."""
    bare = _rounds(cpu, live, 0.0, 0.0, FIRST_HANDOFF)
    if bare is None:
        return _checked(Lock(outside=outside), np.zeros_like(live), False, cpu, live)
    fit = _checked(*bare, True, cpu, live)
    if np.all(np.abs(np.array(fit.twin) / live - 1) <= MATCHED):
        return fit
    step = STEP_SHARE * float(np.min(live))
    stepped = _rounds(cpu, live, max(outside, step), step, fit.lock.handoff or FIRST_HANDOFF)
    return _checked(*stepped, True, cpu, live) if stepped else fit


def _rounds(cpu: Callable[[Lock], np.ndarray], live: np.ndarray, o: float, step: float, h: float) -> tuple[Lock, np.ndarray] | None:
    """`fitted`'s rounds from the CPU outside the handlers `o` (0: none, and none fitted;
    else fitted, each run with at least `step` of it) and the hand-off `h`: the lock and
    the hand-offs per request at each load; None where the loads cannot tell them from a
    constant."""
    found, solved = 0.0, o
    k = np.zeros_like(live)
    for _ in range(LOCK_ROUNDS):
        without = cpu(Lock(handoff=0.0, outside=o))
        if np.max(live - without) <= 0:
            return Lock(handoff=0.0, outside=solved), k  # nothing beyond the twin's own demands for hand-offs to explain
        k, h = _per_request(cpu, live, o, h, without)
        if len(live) < 2 or np.ptp(k) < SEPARABLE * np.max(k):
            return None
        excess = live - (without - o)  # beyond the twin's own demands, at each load
        if o > 0:
            solved, found = _line(k, excess)
            o = max(solved, step)
        else:
            found = max(0.0, float(k @ excess / (k @ k)))
        h = found if found > 0 else FIRST_HANDOFF  # probe again with a hand-off that shows
    return Lock(handoff=found, outside=solved), k


def _per_request(cpu: Callable[[Lock], np.ndarray], live: np.ndarray, o: float, h: float, without: np.ndarray) -> tuple[np.ndarray, float]:
    """The twin's hand-offs per request at each load, (with h − without) ÷ h, and the h
    they were read at: from `h`, tripled until the hand-offs make at least PROBE of
    what is to be explained (a run's noise swamps a hand-off far smaller than the fit's,
    and a far larger one saturates the twin, where every load hands off alike)."""
    for _ in range(PROBE_STEPS):
        with_h = cpu(Lock(handoff=h, outside=o))
        if np.max(with_h - without) >= PROBE * np.max(live - without):
            break
        h *= 3
    return (with_h - without) / h, h


def _line(k: np.ndarray, excess: np.ndarray) -> tuple[float, float]:
    """o + k · h through the traces' (k, excess), least squares, both at least 0."""
    h, o = np.polyfit(k, excess, 1)
    if h <= 0:
        return max(0.0, float(np.mean(excess))), 0.0
    if o < 0:
        return 0.0, float(k @ excess / (k @ k))
    return float(o), float(h)


def _checked(lock: Lock, k: np.ndarray, separable: bool, cpu: Callable[[Lock], np.ndarray], live: np.ndarray) -> Fit:
    return Fit(lock, separable, [float(x) for x in live], [float(x) for x in cpu(lock)], [float(x) for x in k])
