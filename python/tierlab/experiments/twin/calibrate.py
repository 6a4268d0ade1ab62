"""`tierlab twin calibrate`: a model of the live system, in the ordinary YAML format,
from live traces and the model they were run from (or from a simulated trace with
per-request records, whose demands are known: the calibration's own test). What each
figure of the twin is made from — per tier and request type, the machine's speed, the
effective cores, the contention growth and the pools' hand-off — is docs/twin.md's
table and sections, the one account of it; the functions below cite the parts they
compute."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import yaml

from ...analysis.machine import machine
from ...errors import InputError
from ...live import connections, cpu_budget
from ...model import LoadedModel, dist, load_model
from ...model.pools import PoolSetting, held_by_sessions
from ...model.spec import Open
from ...run import simulate
from ...trace import Summary, Trace, read_trace
from ...trace.schema import figures
from .classical import demand_law, regression
from .fit import FLOOR, Form, fitted, mean_of
from .lock import Lock, at_cpu, evidence
from .lock import fitted as lock_fitted
from .measured import Measured, cpu_cores, hand_offs, measured
from .per_request import GROWTH_MIN, T_MIN, line, scaled_line
from .round_trip import fitted as round_trip_fitted
from .round_trip import waits

CEILING_QUANTILE = 0.95  # of the process's CPU over busy windows: its effective cores
UNMEASURED = ("acquire_cpu", "retransmit", "handoff", "handoff_cpu")  # pool fields a twin does not take from the model
CLIENTS = "clients"  # the twin's pool of the clients' connections, where the model has none held by sessions
BUSY = 2.0  # requests in service for a window to show whether the process can use a second core
BUSY_WINDOWS = 10  # such windows needed to read the process's CPU ceiling from them
MATCH_ROUNDS = 3  # of simulating the twin at the traces' loads to size its hand-off CPU
MATCH_SEEDS = 3  # runs per trace and round
# The growth's fit: rounds of simulating the twin at the traces' loads, each solving the
# line through them with the counts the last run's grown steps saw; more seeds than the
# hand-off's, as near saturation a run's CPU per request (its waits' hand-offs) is noisy.
GROWTH_ROUNDS, GROWTH_SEEDS = 6, 8
IDLE_MARGIN = 0.01  # of the CPU per request's growth between the loads: what a hand-off's CPU run must miss by to give way to an idle token


@dataclass(frozen=True)
class Growth:
    """Chen & Gorton's contention cost on the app tier's CPU: each of its CPU demands ×
    `scale` × (1 + `per` · min(n, `cap`)), n the worker threads other requests hold when
    the step starts. Found from the traces (`calibrate(contention=True)`): live, the
    process's CPU per request grows with its requests in service (the interpreter
    lock's hand-overs, two threads sharing the machine's cores), so one load cannot say
    both the demand and its growth; two loads can. Request by request, the handlers'
    CPU stops growing past a few threads held (`levelling`): `cap` (None: it did not
    level off within the traces' range)."""

    scale: float = 1.0
    per: float = 0.0
    cap: int | None = None

    def spec(self, threads: str) -> dict | None:
        """The model's `contention` of each grown step; None when nothing grows."""
        if self.per <= 0:
            return None
        return {"pool": threads, "count": "busy", "per": self.per} | ({"max": self.cap} if self.cap else {})

    def seen(self, threads_busy: float) -> float:
        """The count a grown step sees when `threads_busy` are held (its mean, capped)."""
        return min(threads_busy, self.cap) if self.cap else threads_busy


@dataclass
class Calibration:
    model: dict  # the twin, as the model file holds it
    base_dir: Path  # where the model's relative paths (chain CSVs) resolve
    demands: pd.DataFrame  # per type: what the twin's programs use
    cores: dict[str, float]
    law: dict[str, float]
    regression: pd.DataFrame
    probe_ms: float | None  # the machine's speed during the runs (None: not recorded)
    notes: list[str] = field(default_factory=list)
    handoff: dict[str, float] = field(default_factory=dict)  # per pool, seconds per hand-off
    handoff_cpu: dict[str, float] = field(default_factory=dict)  # per pool in the twin, its CPU-seconds
    handoff_idle: dict[str, float] = field(default_factory=dict)  # per pool in the twin as an idle token, its seconds
    growth: Growth = Growth()
    growth_fit: list[dict[str, float]] = field(default_factory=list)  # per trace: its load, the CPU per request live and in the twin
    outside: float = 0.0  # CPU-seconds per request outside the handlers, in the twin
    lock: dict | None = None  # `calibrate(lock=True)`'s evidence and fit (None: not looked for)
    once: dict | None = None  # `calibrate(idle_handoff=, request_growth=)`'s evidence (None: neither asked)
    round_trip: dict | None = None  # `calibrate(round_trip=True)`'s fit and check (None: not asked)

    def loaded(self) -> LoadedModel:
        return load_model(self.model, self.base_dir)

    def report(self) -> dict:
        """The calibration's figures: direct demands, effective cores, and the
        classical estimates beside them with their residuals."""
        reg = self.regression
        return (
            {
                "model": self.model["name"],
                "cores": _finite(self.cores),
                "demand_law": _finite(self.law),
                "regression": _finite({k: reg.attrs[k] for k in ("relative_residual", "relative_residual_all", "windows")}) | {"types": _records(reg)},
                "demands": _records(self.demands),
                "machine": {"cpu_probe_ms": self.probe_ms},
                "handoff": _finite(self.handoff),
                "handoff_cpu": _finite(self.handoff_cpu),
                "contention": {"scale": self.growth.scale, "per": self.growth.per, "max": self.growth.cap, "traces": [_finite(t) for t in self.growth_fit]},
                "notes": self.notes,
            }
            | ({"interpreter_lock": self.lock} if self.lock is not None else {})
            | ({"growth_once": self.once} if self.once is not None else {})
            | ({"round_trip": self.round_trip} if self.round_trip is not None else {})
        )

    def write(self, out: str | Path) -> Path:
        """The twin as `out` (YAML; chain CSV paths made relative to its folder) and
        the report beside it as `<out stem>.calibration.json`."""
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        model = json.loads(json.dumps(self.model))
        chain = model.get("workload", {}).get("chain", {})
        if chain.get("csv"):
            chain["csv"] = os.path.relpath((self.base_dir / chain["csv"]).resolve(), out.parent.resolve())
        header = "# A digital twin calibrated by `tierlab twin calibrate` (see its .calibration.json).\n"
        out.write_text(header + yaml.safe_dump(model, sort_keys=False, allow_unicode=True, width=160))
        out.with_suffix(".calibration.json").write_text(json.dumps(self.report(), indent=2, allow_nan=False) + "\n")
        return out


def _finite(figures: dict) -> dict:
    """JSON has no NaN: a figure that could not be had is null."""
    return {k: (float(v) if np.isfinite(v) else None) for k, v in figures.items()}


def _records(df: pd.DataFrame) -> dict:
    return {str(k): _finite(row.to_dict()) for k, row in df.iterrows()}


def calibrate(
    traces: Sequence[str | Path],
    model: LoadedModel,
    form: Form = "lognormal",
    handoff: bool = False,
    contention: bool = False,
    lock: bool = False,
    idle_handoff: bool = False,
    request_growth: bool = False,
    connection_limit: int | None = None,
    round_trip: bool = False,
) -> Calibration:
    """The twin of the system the traces measured, run from `model`; with `handoff`, its
    pools hand a freed token to the next waiter after the waiter's own CPU run
    (`handoff_cpu`, an exponential), sized so that the twin, run at the traces' loads,
    hands off as long per wait as they measured; with `contention`, the app tier's CPU
    demands grow with its requests in service (`Growth`), fitted so that the twin, run
    at each trace's load, uses the CPU per request the trace measured (two traces at
    different loads at least); with `lock`, where the traces show an interpreter lock
    (`lock.evidence`), the twin has one, its hand-off fitted so that the twin uses each
    trace's CPU per request at its load (`lock.fitted`), after the others. All are
    matched by simulation (`matched`).

    So that the twin grows its CPU per request once, as live (issue 41 item 4), each
    only where the traces show it: with `idle_handoff` (and `handoff`), the pools hand
    their tokens over idle (the pool's `handoff`: the measured wait, no CPU run) where
    the twin with the waiters' CPU run grows the CPU per request between the traces'
    loads further from what they did than the twin with idle tokens, by IDLE_MARGIN;
    with `request_growth`, the app's CPU demands grow with the threads held as the
    requests one by one show it (`per_request.line`), where they show it; instead of
    `contention`.

    With `round_trip`, last, the database's statements hold their connections for the
    round trip the traces measured beyond what the database executed, growing with the
    connections other requests hold (`round_trip`; a database of its own, PostgreSQL).

    The live server's limit on its clients' connections (recorded in the traces by the
    testbed, or `connection_limit` where they lack it) becomes the twin's pool held by
    sessions: each session keeps its connection through its thinks, so the limit bounds
    the sessions open at once."""
    if contention and request_growth:
        raise InputError("give --contention (the growth through the traces' totals) or --request-growth (through the requests one by one), not both")
    cores_of = cpu_cores(model)
    read = [(str(t), read_trace(t)) for t in traces]
    m = measured(read, cores_of)
    # The server's limit on its clients' connections bounds the sessions open at once:
    # the twin's runs at the traces' loads (the matching below) hold it too.
    clients = _clients(read, m.tier, connection_limit)
    base = model if clients is None else _with_clients(model, m.tier, clients)
    setting = PoolSetting.find(base, m.tier)
    budgets = cpu_budget.recorded(t for _, t in read)  # tiers held to a CPU budget live: that is their size
    cores = effective_cores(m, budgets.get(m.tier))
    measured_handoff = {p: h for p, h in m.handoff.items() if p in base.spec.tiers[m.tier].pools and h > 0}
    handed = {p: handoff_cpu(m, p, cores["cores"], setting.connections) for p in measured_handoff} if handoff else {}
    once: dict[str, Any] = {}
    idle: dict[str, float] = {}
    grown = Growth()
    if request_growth:
        found = line(m, m.pools[setting.threads])
        once["growth"] = None if found is None else asdict(found) | {"shown": found.shown}
        grown = Growth(found.base, found.slope / found.base, found.cap) if found is not None and found.shown else grown
    cal = _twin(base, read, m, setting, cores, form, handed, grown, idle=idle)

    def finished(cal: Calibration) -> Calibration:
        cal = _with_once(cal, once, m.tier)
        if clients is not None:
            cal.notes.append(
                f"{m.tier}: at most {clients} clients' connections at once (the live server's limit, "
                f"{'recorded in the traces' if connection_limit is None else 'as given'}), each held by a session from its first request "
                "to its end: a pool held by sessions; a session past it waits to connect"
            )
        cal = _locked(cal, base, read, m, setting, cores, form) if lock else cal
        return _with_round_trip(cal, read, m, setting) if round_trip else cal

    if not handed and not contention:
        return finished(cal)
    if contention and len({round(t.summary["throughput"], 6) for _, t in read}) < 2:
        raise InputError("--contention needs traces at two loads or more (their CPU per request against their requests in service); give a second trace")
    first = dict(handed)
    for _ in range(MATCH_ROUNDS if handed else 0):
        sims = matched(cal.loaded(), [t for _, t in read], m.tier, setting.threads)
        handed = {p: d * m.handoff[p] / lasted if (lasted := _pooled_handoff(sims, p)) > 0 else d for p, d in handed.items()}
        cal = _twin(base, read, m, setting, cores, form, handed, grown, idle=idle)
    if idle_handoff and handed and len(read) > 1:
        # The CPU run grows the twin's CPU per request with the waits, an idle token does
        # not: the token where the run's twin grows it between the traces' loads further
        # from what they did than the token's, by IDLE_MARGIN at least (its level is the
        # demands', alike in both).
        live_cpu = cpu_per_request(read, cores_of, cores["speed"])
        tokens = _twin(base, read, m, setting, cores, form, {}, grown, idle={p: m.handoff[p] for p in handed})
        forms = {"cpu": cal, "idle": tokens}
        per = {k: [x["cpu"] for x in matched(c.loaded(), [t for _, t in read], m.tier, setting.threads, GROWTH_SEEDS)] for k, c in forms.items()}
        growth_of = lambda cpu: np.log(np.asarray(cpu) / cpu[0])  # noqa: E731
        off = {k: float(np.max(np.abs(growth_of(v) - growth_of(live_cpu)))) for k, v in per.items()}
        chosen = "idle" if off["cpu"] - off["idle"] >= IDLE_MARGIN else "cpu"
        once["handoff"] = {"live_cpu": [float(x) for x in live_cpu], "cpu_run": per["cpu"], "idle": per["idle"], "chosen": chosen}
        if once["handoff"]["chosen"] == "idle":
            cal, idle, handed = tokens, tokens.handoff_idle, {}
    if handed:
        cal.notes.append(
            "hand-off CPU matched by simulation: "
            + ", ".join(f"{p} {first[p] * 1e6:.0f} µs from the windows' stretch → {d * 1e6:.0f} µs in the twin" for p, d in handed.items())
        )
    if contention:
        # Per trace: the process's CPU per served request (the service demand law), in
        # the twin's units (divided by the speed the process got).
        live_cpu = cpu_per_request(read, cores_of, cores["speed"])
        runs = [t for _, t in read]
        found = line(m, m.pools[setting.threads])
        cap = found.cap if found is not None else None
        growth, base_cpu, fits = Growth(cap=cap), None, []
        for _ in range(GROWTH_ROUNDS):
            sims = matched(cal.loaded(), runs, m.tier, setting.threads, GROWTH_SEEDS)
            own = [x["cpu"] - _handed_cpu(x, handed) for x in sims]  # what the grown steps used
            base_cpu = base_cpu or own  # the first twin grows nothing: its demand
            seen = (
                [(o / (growth.scale * b) - 1) / growth.per for o, b in zip(own, base_cpu)] if growth.per > 0 else [growth.seen(x["threads_busy"]) for x in sims]
            )
            growth = _line(seen, [(live - x["cpu"] + o) / b for live, x, o, b in zip(live_cpu, sims, own, base_cpu)], cap)
            fits.append(growth)
            cal = _twin(base, read, m, setting, cores, form, handed, growth, idle=idle)
        # The rounds scatter around the fixed point (the runs' noise): their mean after
        # the first, which started from no growth.
        growth = Growth(float(np.mean([g.scale for g in fits[1:]])), float(np.mean([g.per for g in fits[1:]])), cap)
        cal = _twin(base, read, m, setting, cores, form, handed, growth, idle=idle)
        sims = matched(cal.loaded(), runs, m.tier, setting.threads, GROWTH_SEEDS)
        cal.growth_fit = [
            {"throughput": t.summary["throughput"], "threads_busy": x["threads_busy"], "live_cpu": float(live), "twin_cpu": x["cpu"]}
            for (_, t), x, live in zip(read, sims, live_cpu)
        ]
        cal.notes.append(
            f"contention matched by simulation at the traces' loads: every CPU demand of {m.tier} × {cal.growth.scale:.3f} × (1 + {cal.growth.per:.3f} · threads other requests hold"
            + (
                f", up to {cap}, where the handlers' CPU levelled off request by request); "
                if cap
                else "; the handlers' CPU did not level off within the traces); "
            )
            + "; ".join(
                f"{f['throughput']:.0f} requests/s: {f['live_cpu'] * 1e3:.3f} ms per request live, {f['twin_cpu'] * 1e3:.3f} in the twin"
                for f in cal.growth_fit
            )
        )
    return finished(cal)


def _with_once(cal: Calibration, once: dict[str, Any], tier: str) -> Calibration:
    """`cal` with what the traces showed of item 4's mechanisms (`once`: per pool whether
    its hand-off is idle, the requests' growth line), in its report and notes."""
    if not once:
        return cal
    cal.once = once
    if "handoff" in once:
        h = once["handoff"]
        cal.notes.append(
            "the pools' hand-off as the waiter's CPU run or as an idle token, the twin's CPU per request at the traces' loads against live: "
            + "; ".join(
                f"{a * 1e3:.3f} ms live, {b * 1e3:.3f} with the run, {c * 1e3:.3f} with the token" for a, b, c in zip(h["live_cpu"], h["cpu_run"], h["idle"])
            )
            + (
                ": idle tokens in the twin (" + ", ".join(f"{p} {d * 1e6:.0f} µs" for p, d in cal.handoff_idle.items()) + ", no CPU run)"
                if h["chosen"] == "idle"
                else ": the CPU run in the twin"
            )
        )
    if "growth" in once:
        g = once["growth"]
        cal.notes.append(
            "the handlers' CPU against the threads held, request by request: "
            + (
                "too few requests, or a pool too small, to tell"
                if g is None
                else f"{g['base']:.3f} + {g['slope']:.3f} · min(held, {g['top']}) ({g['requests']} requests, t = {g['t']:.1f}): "
                + (
                    f"in the twin, every CPU demand of {tier} × {cal.growth.scale:.3f} × (1 + {cal.growth.per:.3f} · threads other requests hold"
                    + (f", up to {cal.growth.cap})" if cal.growth.cap else ")")
                    if g["shown"]
                    else f"no growth in the twin (a growth needs t ≥ {T_MIN:g} and {GROWTH_MIN:.0%} at the top)"
                )
            )
        )
    return cal


def _with_round_trip(cal: Calibration, read: list[tuple[str, Trace]], m: Measured, setting: PoolSetting) -> Calibration:
    """`cal` with each access's round trip beyond the database's executor time
    (`round_trip`: the line through the traces' measured waits and connections held);
    the connections the twin then holds at each trace's load, simulated, against the
    trace's in the report and notes."""
    if m.db_tier is None:
        raise InputError("--round-trip needs a database in a process of its own (PostgreSQL): an embedded one's statements are the server's own CPU")
    runs = [t for _, t in read]
    live = waits(runs, m.tier, m.db_tier)
    held_at = f"busy:{setting.connections}"
    held = [float(t.summary["tiers"][m.tier]["servers"][0]["pools"][setting.connections]["mean_busy"]) for t in runs]
    trip = round_trip_fitted(np.array(held), live)
    out = replace(cal, model=trip.applied(cal.model, m.tier, setting.connections, m.db_tier), notes=list(cal.notes))
    sims = matched(out.loaded(), runs, m.tier, setting.threads, GROWTH_SEEDS)
    checks = [
        {"throughput": t.summary["throughput"], "live_wait": float(w), "live_held": h, "twin_held": x[held_at]} for t, w, x, h in zip(runs, live, sims, held)
    ]
    out.round_trip = asdict(trip) | {"traces": checks}
    out.notes.append(
        f"{m.db_tier}: each access's statements wait {trip.seconds * 1e6:.0f} µs × (1 + {trip.per:.3f} · connections other requests hold) "
        "beyond what it executes (the client's wait less its own CPU and pg_stat_statements' time), the line through the traces' loads; "
        + "; ".join(
            f"{c['throughput']:.0f} requests/s: {c['live_wait'] * 1e6:.0f} µs live, connections held {c['live_held']:.3f} live, {c['twin_held']:.3f} in the twin"
            for c in checks
        )
    )
    return out


def cpu_per_request(read: list[tuple[str, Trace]], cores_of: dict[str, int | None], speed: float, apart: float = 0.0) -> np.ndarray:
    """Per trace: the process's CPU per served request (the service demand law), less
    `apart` seconds of it per request that the twin runs on another station, in the
    twin's units (divided by the `speed` the process got)."""
    return np.array([(demand_law(measured([one], cores_of))["demand_law"] - apart) / speed for one in read])


def _locked(
    cal: Calibration, base: LoadedModel, read: list[tuple[str, Trace]], m: Measured, setting: PoolSetting, cores: dict[str, float], form: Form
) -> Calibration:
    """`cal` with the interpreter lock where the traces show one (`lock.evidence`), its
    hand-off fitted at the traces' loads (`lock.fitted`); the evidence and the fit in
    the report either way. The lock holds one core, at the speed the process got of
    it. An embedded database's statements (SQLite's) run outside the lock live — the
    sqlite3 module releases it around each statement, so the process peaks above one
    core — so the twin runs them on a station of their own beside the lock, the model's
    other cores (docs/twin.md)."""
    cores_of = cpu_cores(base)
    # Room for a second core to show: the model's cores, or fewer under a CPU budget
    # (held to half a core, a process stays below one whatever its threads share).
    budget = cpu_budget.recorded(t for _, t in read).get(m.tier)
    room = cores_of[m.tier] or 1
    seen = evidence(m, room if budget is None else min(room, int(budget)), setting.connections, BUSY_WINDOWS, CEILING_QUANTILE)
    cal.notes.append(seen.note())
    cal.lock = {"present": seen.present, "cores": seen.cores, "windows": seen.windows, "ceiling": _finite({"x": seen.ceiling})["x"]}
    if not seen.present:
        return cal
    # SQLite's statements, CPU per request: outside the lock, so not of its speed.
    apart = float(m.requests[f"{m.tier}.db_cpu_time"].mean()) if m.db_tier is None else 0.0
    speed = cores["busy_mean"] * (1 - apart / cal.law["demand_law"])
    one = cores | {"cores": 1.0, "speed": speed}
    build = lambda lock: _twin(base, read, m, setting, one, form, cal.handoff_cpu, cal.growth, lock, cal.handoff_idle)  # noqa: E731
    runs = [t for _, t in read]
    cpu = lambda lock: np.array([x["cpu"] for x in matched(build(lock).loaded(), runs, m.tier, setting.threads, GROWTH_SEEDS)])  # noqa: E731
    fit = lock_fitted(cpu, cpu_per_request(read, cores_of, speed, apart), build(Lock()).outside)
    locked = build(fit.lock)
    locked.growth_fit, locked.once = cal.growth_fit, cal.once
    locked.lock = cal.lock | {
        "switch_interval": fit.lock.switch_interval,
        "handoff": fit.lock.handoff,
        "outside_handlers": locked.outside,
        "separable": fit.separable,
        "traces": [{"live_cpu": a, "twin_cpu": b, "handoffs_per_request": k} for a, b, k in zip(fit.live, fit.twin, fit.per_request)],
    }
    locked.notes = cal.notes + [
        f"interpreter lock in the twin: one core at speed {speed:.2f}, switch interval {fit.lock.switch_interval * 1e3:g} ms (CPython's default), "
        + (
            f"hand-off {fit.lock.handoff * 1e6:.0f} µs and {locked.outside * 1e3:.3f} ms per request outside the handlers, fitted at the traces' loads ("
            + "; ".join(
                f"{a * 1e3:.3f} ms per request live, {b * 1e3:.3f} in the twin, {k:.1f} hand-offs" for a, b, k in zip(fit.live, fit.twin, fit.per_request)
            )
            + ")"
            if fit.separable
            else "no hand-off: the traces' loads contend the lock alike, so its hand-off cannot be told from a constant CPU (give traces at two loads, one light)"
        )
    ]
    return locked


def _handed_cpu(sim: dict[str, float], handed: dict[str, float]) -> float:
    """The hand-offs' CPU per served request in a run of `matched`."""
    return sum(sim.get(f"granted:{p}", 0.0) * d for p, d in handed.items()) / sim["served"] if sim["served"] else 0.0


def _line(seen: list[float], grown: list[float], cap: int | None) -> Growth:
    """scale × (1 + per · n) through the traces' (n seen, demand grown ÷ demand)."""
    return Growth(*scaled_line(np.array(seen), np.array(grown)), cap)


def _twin(
    base: LoadedModel,
    read: list[tuple[str, Trace]],
    m: Measured,
    setting: PoolSetting,
    cores: dict[str, float],
    form: Form,
    handed: dict[str, float],
    growth: Growth,
    lock: Lock | None = None,
    idle: dict[str, float] | None = None,
) -> Calibration:
    """The twin of `calibrate`, its pools' hand-off CPU `handed` (none: not in the twin)
    or idle token's seconds `idle`, its app tier's CPU grown by `growth`, and under
    `lock` (`_locked`)."""
    idle = idle or {}
    cores_of = cpu_cores(base)
    names = list(base.spec.tiers)
    db = m.db_tier or (names[names.index(m.tier) + 1] if names.index(m.tier) + 1 < len(names) else None)
    if db is None:
        raise InputError(f"the model has no tier after {m.tier!r} for the database; give the model the trace was run from")
    notes: list[str] = []
    law = demand_law(m)
    # The woken waiter's CPU is not extra work: live it is inside what was measured —
    # a connection's in getConnection()'s (`pool_cpu_time`, the pool's `acquire_cpu`), a
    # thread's outside the handler (taken before its clock starts) — so it leaves
    # those, and the CPU per request stays the measured one. (A simulated trace counts
    # a thread's in the request's `cpu_time`, where this does not look for it.)
    waiter_cpu = {p: m.granted[p] * d for p, d in handed.items()}  # CPU-seconds, all traces
    outside = growth.scale * max(0.0, law["outside_handlers"] / cores["speed"] - waiter_cpu.get(setting.threads, 0.0) / len(m.requests))
    outside = lock.outside if lock is not None and lock.outside is not None else outside
    outside = outside if outside >= FLOOR else 0.0  # less than the clocks can tell apart: none (an imported trace's, by construction)
    contention = growth.spec(setting.threads)
    away = _outside_the_server(m, read, outside)
    per_query = _db_per_query(m, notes)
    spec = base.spec.model_dump(mode="json", exclude_unset=True)
    rows, requests = {}, dict(spec["requests"])
    for t, r in m.requests.groupby(m.requests["type"].astype(str)):
        if t not in requests:
            raise InputError(f"the traces hold request type {t!r}, which the model lacks; give the model the trace was run from")
        row, program = _type(
            r, m, setting, db, per_query, outside, cores["speed"] / growth.scale, form, contention, away.get(t, away["(all)"]), lock is not None
        )
        rows[t] = row
        requests[t] = {"priority": requests[t].get("priority", 0), **program}
    unseen = sorted(set(requests) - set(rows))
    if unseen:
        notes.append(f"not served in the traces, so their programs are the model's: {', '.join(unseen)}")
    tiers = dict(spec["tiers"])
    tier = dict(tiers[m.tier])
    # getConnection()'s CPU is measured (`pool_cpu_time`); the live server's accept
    # backlog is the kernel's: the model's assumptions for them are not carried over.
    tier["pools"] = {
        p: {k: x for k, x in v.items() if k not in UNMEASURED} | ({"size": m.pools[p]} if p in m.pools else {}) for p, v in tier.get("pools", {}).items()
    }
    # Not in the twin by default: on the test's live run a twin with a fixed-length
    # hand-off served 12% less than live, against 3% less without (docs/twin.md, "Limits").
    for p, d in handed.items():
        tier["pools"][p]["handoff_cpu"] = {"exponential": d}
    for p, d in idle.items():
        tier["pools"][p]["handoff"] = {"exponential": d}
    notes.append(
        f"pools' hand-off (a given-back token free until the woken waiter takes it), per wait, "
        f"{'in the twin as the waiter’s CPU run' if handed else 'measured, not in the twin'}: "
        + ", ".join(
            (f"{p} {h * 1e6:.0f} µs" + (f" ({handed[p] * 1e6:.0f} µs of CPU, ×{h / handed[p]:.2f} under processor sharing)" if p in handed else ""))
            if h == h
            else f"{p}: none measured"
            for p, h in m.handoff.items()
        )
    )
    asked = float(m.requests[f"{m.tier}.db_requests"].sum())
    acquire = growth.scale * (pool_cpu(m) / cores["speed"] - (waiter_cpu.get(setting.connections, 0.0) / asked if asked else 0.0))
    if acquire > 0:
        tier["pools"][setting.connections]["acquire_cpu"] = {"exponential": acquire}
        if contention:
            tier["pools"][setting.connections]["acquire_contention"] = contention
    tier["stations"] = {"cpu": {"kind": "cpu", "cores": int(cores["cores"])}}
    if lock is not None:
        tier["interpreter_lock"] = lock.spec()
    tiers[m.tier] = tier
    if lock is not None and not m.db_tier:
        apart = max(1, (cores_of[m.tier] or 1) - 1)
        tiers[db] = {k: v for k, v in tiers[db].items() if k != "stations"} | {"stations": {"cpu": {"kind": "cpu", "cores": apart}}}
        notes.append(
            f"{db}: embedded in the application's process (SQLite): its statements run outside the interpreter lock, so the twin calls {db} for them, "
            f"on {apart} core(s) of their own (the model's {cores_of[m.tier]} less the lock's)"
        )
    elif m.db_tier:
        db_budget = cpu_budget.recorded(t for _, t in read).get(db)
        db_station = {"cores": cores_of[db] or 1} if db_budget is None else cpu_budget.station(db_budget)
        tiers[db] = {k: v for k, v in tiers[db].items() if k != "stations"} | {"stations": {"cpu": {"kind": "cpu", **db_station}}}
        size = "as the model states" if db_budget is None else f"its live CPU budget ({db_budget:g} core(s), a cgroup's quota)"
        notes.append(
            f"{db}: {db_station['cores']} core(s) at speed {db_station.get('speed', 1.0):g}, {size}; the statements' demands are measured, their contention is not (no overhead)"
        )
    else:
        notes.append(
            f"{db}: embedded in the application's process (SQLite, no process of its own): the statements' CPU is the process's, "
            f"on its {int(cores['cores'])} effective core(s) inside each access; the {db} tier, as the model has it, serves only types the traces lack"
        )
    notes.append(
        f"{m.tier}: {int(cores['cores'])} effective core(s) (the process's CPU ceiling with 2+ requests in service: {cores['ceiling']:.2f}), "
        f"at {cores['speed']:.2f} of its speed ({'its live CPU budget' if cpu_budget.recorded(t for _, t in read).get(m.tier) is not None else 'its mean CPU then'}); its CPU demands are divided by {cores['speed']:.2f}"
    )
    if outside > 0:
        notes.append(
            f"{law['outside_handlers'] * 1e3:.3f} ms of the process's CPU per request is outside the handlers (service demand law − handler CPU): a CPU step before the worker thread"
        )
    twin = spec | {
        "name": f"{spec['name']}-twin",
        "description": f"calibrated from {len(read)} trace(s) of {spec['name']}",
        "tiers": tiers,
        "requests": requests,
    }
    demands = pd.DataFrame.from_dict(rows, orient="index").rename_axis("type")
    probe = machine([t for _, t in read])["cpu_probe_ms"]
    return Calibration(twin, base.base_dir, demands, cores, law, regression(m), probe, notes, m.handoff, handed, idle, growth, outside=outside)


def _clients(read: list[tuple[str, Trace]], tier: str, given: int | None) -> int | None:
    """The clients' connections the live server held at most: as the traces recorded
    them (`connections.recorded`), or as `given` where they did not; None if neither."""
    recorded = connections.recorded((t for _, t in read), tier)
    if given is not None and recorded is not None and given != recorded:
        raise InputError(f"--connection-limit {given}, but the traces recorded {recorded} clients' connections; drop the option or give {recorded}")
    return recorded if recorded is not None else given


def _with_clients(model: LoadedModel, tier: str, held: int) -> LoadedModel:
    """`model` whose `tier` holds at most `held` clients' connections, one per session
    from its first request to its end: its own pool held by sessions, resized, or
    CLIENTS (investigations/twin/results/connection_limit)."""
    pools = {p: v.model_dump(exclude_unset=True) for p, v in model.spec.tiers[tier].pools.items()}
    pool = held_by_sessions(model.spec.tiers[tier]) or CLIENTS
    pools[pool] = pools.get(pool, {}) | {"kind": "other", "size": held, "hold": "session"}
    return model.with_changes({f"tiers.{tier}.pools": pools})


def _outside_the_server(m: Measured, read: list[tuple[str, Trace]], outside: float) -> dict[str, float]:
    """Per request type (and `(all)`), the seconds of its response time spent outside
    the tier's handler (`response_time` − `<tier>.time`: the network, the load
    generator, the server's I/O thread), at the lightest trace's load (the least
    queueing), less the CPU the twin already gives that I/O thread (`outside`): the
    constant delay a request meets before the tier. Live, it was 2.3 ms at light load
    and the handler-less CPU 0.8 ms of it (studies/results/twin/notes.md at 0e0577b); simulated
    and with no link in front, none."""
    lightest = min(range(len(read)), key=lambda k: read[k][1].summary["throughput"])
    r = m.requests[m.requests["trace"] == lightest]
    gap = r["response_time"] - r[f"{m.tier}.time"]
    per = gap.groupby(r["type"].astype(str)).mean().to_dict() | {"(all)": float(gap.mean())}
    return {t: max(0.0, float(x) - outside) for t, x in per.items()}


def effective_cores(m: Measured, budget: float | None = None) -> dict[str, float]:
    """The process's effective cores, from data: the 95th percentile of its CPU (cores
    busy) over the windows in which two or more requests were in service — where a
    second core, if the process could use one, would show; its speed, what the process
    got of them then (`busy_mean` ÷ cores: the rest was other processes'). Under a CPU
    `budget` (the testbed's cgroup, `live up --cpu`) the station is the budget's
    (`cpu_budget.station`: its whole cores, at the budget's share of them), whatever the
    process used: a quota is the process's to use, and in calibration runs below capacity
    it used less — on the JVM bookstore held to one core, 0.76 of it with two requests in
    service, and a twin slowed to that saturated at 0.76 core where live served 1.7× more
    (studies/results/twin_java_budget_quick)."""
    w = m.windows
    busy = w[w["concurrency"] >= BUSY]
    if len(busy) < BUSY_WINDOWS:
        raise InputError(
            f"the traces have {len(busy)} windows with {BUSY:g}+ requests in service ({BUSY_WINDOWS} needed): the process's CPU ceiling cannot be seen; calibrate from a run with more load "
            "(README, 'A run busy enough to calibrate': `tierlab live run examples/twin_calibration.yaml --out DIR`)"
        )
    ceiling = float(np.quantile(busy["cpu"], CEILING_QUANTILE))
    got = float(busy["cpu"].mean())
    if budget is not None:
        station = cpu_budget.station(budget)
        return {"ceiling": ceiling, "windows": float(len(busy)), "cores": float(station["cores"]), "busy_mean": got, "speed": station["speed"]}
    cores = max(1, round(ceiling))
    # Not capped at 1: on a quiet machine the bookstore's process got 1.11 cores with one
    # interpreter lock (SQLite's statements run outside it), and a twin held to one
    # core served 10-14% less than the run it was calibrated on.
    return {"ceiling": ceiling, "windows": float(len(busy)), "cores": float(cores), "busy_mean": got, "speed": got / cores}


def handoff_cpu(m: Measured, pool: str, cores: float, connections: str) -> float:
    """CPU-seconds the woken waiter of `pool` runs on the app's CPU before it takes its
    token (the twin's `handoff_cpu`), first estimate: the hand-offs' time over the
    stretch processor sharing gave them, per hand-off (`calibrate` then matches it by
    simulation, `twin_handoff`).

    On `cores` shared by n jobs each progresses at min(1, cores/n): h seconds of
    hand-off with n jobs at the CPU ran h / max(1, n/cores) CPU-seconds. n per window,
    from the trace's series: the requests at the server (`concurrency`) less those
    waiting for a pool, who do not compute — but for the woken waiters (the pools'
    `handing_off`), who do — less those in a call to a database of its own (the
    connections held × the share of their holding spent in calls; none for an embedded
    database, whose statements run on the app's CPU in the twin). The window's mean n
    stands for what its hand-offs saw: the trace has nothing finer, and a hand-off
    runs only when there are waiters, so their correlation within a window is lost
    (on a simulated trace of a known demand: within 5%, tests/test_twin_known.py). The
    hand-off itself is one of the n, hence at least 1."""
    w = m.windows
    ran = w[f"handing_off:{pool}"] * w["length"] / np.maximum(1.0, at_cpu(m, connections) / cores)
    return float(ran.sum() / m.granted[pool])


def matched(twin: LoadedModel, traces: list[Trace], tier: str, threads: str, seeds: int = MATCH_SEEDS) -> list[dict[str, float]]:
    """The twin simulated at each trace's load (`_population`) and length,
    `seeds` runs each, pooled per trace: per pool its seconds spent handing off, its
    waits granted and its mean tokens held (`handing:<pool>`, `granted:<pool>`,
    `busy:<pool>`), the app tier's CPU per served request (`cpu`, the service demand
    law, as the live trace's is measured) and the mean threads busy.

    Why simulate: the windows of a live trace show what its requests met, but a twin
    given figures read from them queues differently from the live server (on
    twin_quick's traces its hand-offs, sized from the jobs the windows had at the CPU,
    lasted 750–830 µs at the runs' own loads, live 540–630): `calibrate` corrects the
    twin by measured ÷ simulated until they agree."""
    out, cores = [], cpu_cores(twin)[tier] or 1
    for t in traces:
        s = t.summary
        run = twin.with_run(duration=s["warmup"] + s["measured_seconds"], warmup=s["warmup"], records=False)
        run = run.with_changes({"workload.population": _population(twin, s)})
        sums: defaultdict[str, float] = defaultdict(float)
        for seed in range(1, seeds + 1):
            sim = simulate(run, seed=seed).summary
            server = sim["tiers"][tier]["servers"][0]
            served = sim["throughput"] * sim["measured_seconds"]
            cpu = server["stations"]["cpu"]
            sums["busy"] += cpu["utilization"] * sim["measured_seconds"] * cores
            sums["served"] += served
            for p, v in server["pools"].items():
                h, n = hand_offs(v, sim["measured_seconds"])
                sums[f"handing:{p}"] += h
                sums[f"granted:{p}"] += n
                sums[f"busy:{p}"] += v["mean_busy"] / seeds
        cpu_per_request = sums["busy"] / sums["served"] if sums["served"] else float("nan")
        out.append(dict(sums) | {"cpu": cpu_per_request, "threads_busy": sums[f"busy:{threads}"]})
    return out


def _population(twin: LoadedModel, summary: Summary) -> dict:
    """The population that offered a trace's load: open, the sessions it started per
    measured second (an imported server's trace records no sessions: its requests, each
    a session of the twin `observed_model` makes); closed, its clients by the interactive
    response time law, N = X · (R + Z) (the trace does not record them, and traces at
    several loads differ)."""
    if isinstance(twin.spec.workload.population, Open):
        started = summary["sessions"]["started"] if summary["source"] != "import" else sum(cast(dict[str, int], summary["requests"]).values())
        return {"session_rate": started / summary["measured_seconds"]}
    think = dist.mean(twin.spec.workload.think)
    return {"clients": max(1, round(summary["throughput"] * (figures(summary["response_time"]).get("mean", 0.0) + think)))}


def _pooled_handoff(sims: list[dict[str, float]], pool: str) -> float:
    """Seconds per hand-off of `pool` over all the runs of `matched` (0: none waited)."""
    granted = sum(x.get(f"granted:{pool}", 0.0) for x in sims)
    return sum(x.get(f"handing:{pool}", 0.0) for x in sims) / granted if granted else 0.0


def pool_cpu(m: Measured) -> float:
    """CPU-seconds per connection request spent taking and giving back the connection
    (`pool_cpu_time` / `db_requests`): the twin's `acquire_cpu`, so that a caching mode
    that asks the pool less often costs less CPU, as it does live."""
    asked = m.requests[f"{m.tier}.db_requests"].sum()
    return float(m.requests[f"{m.tier}.pool_cpu_time"].sum() / asked) if asked else 0.0


def _db_per_query(m: Measured, notes: list[str]) -> float | None:
    """Seconds a statement executes in a database process (pg_stat_statements); None
    for an embedded database (its CPU is in the handler's `db_cpu_time`)."""
    if m.db_tier is None:
        return None
    if m.statements is None or m.statements["calls"].sum() == 0:
        if f"{m.db_tier}.cpu_time" in m.requests:
            notes.append(f"{m.db_tier}: per call, the CPU the tier's own records give ({m.db_tier}.cpu_time per request / db_requests)")
        else:
            notes.append("no statements.parquet: the database's time per statement is the client's (db_time − db_cpu_time), round trip and waits included")
        return None
    st = m.statements
    per = float(st["total_time"].sum() / st["calls"].sum())
    client = float(m.requests[f"{m.tier}.db_time"].sum() / max(1, m.requests[f"{m.tier}.db_queries"].sum()))
    notes.append(f"{m.db_tier}: {per * 1e6:.0f} µs per statement in the database (pg_stat_statements) vs {client * 1e6:.0f} µs seen by the handler")
    return per


def _type(
    r: pd.DataFrame,
    m: Measured,
    setting: PoolSetting,
    db: str,
    per_query: float | None,
    outside: float,
    speed: float,
    form: Form,
    contention: dict | None,
    away: float,
    apart: bool = False,
) -> tuple[dict, dict[str, Any]]:
    """One type's measured demands and its twin programs (app and database tier); the
    app tier's CPU demands divided by the process's `speed`, each with `contention`;
    first, `away` seconds of delay outside the server (`_outside_the_server`); an
    embedded database's statements on the app's CPU, or, `apart` (outside an
    interpreter lock), a call to the database tier."""
    cpu = lambda demand: {"cpu": demand} | ({"contention": contention} if contention else {})  # noqa: E731
    c = lambda name: r[f"{m.tier}.{name}"].to_numpy(dtype=float)  # noqa: E731
    embedded = m.db_tier is None
    interp = (c("cpu_time") - c("pool_cpu_time") - (c("db_cpu_time") if embedded else 0.0)) / speed
    accesses = int(round(float(np.median(c("db_requests")))))
    queries = float(np.mean(c("db_queries")))
    inside = np.clip(c("with_db_active") - c("db_time"), 0, None).sum()
    before = c("before_db").sum()
    share_in = float(inside / (inside + before)) if accesses and inside + before > 0 else 0.0
    first = fitted(interp * (1 - share_in), form)
    steps: list[dict] = [{"delay": away}] if away > 0 else []
    steps += [cpu({"exponential": outside})] if outside > 0 else []
    steps += [{"acquire": setting.threads}, cpu(first)]
    row = {"requests": float(len(r)), "cpu_time": float(np.mean(c("cpu_time"))), "app_cpu": float(np.mean(interp)), "share_in_access": share_in, "away": away}
    row |= {"db_requests": float(accesses), "db_queries": queries, "db_time": float(np.mean(c("db_time"))), "db_cpu_time": float(np.mean(c("db_cpu_time")))}
    programs: dict[str, Any] = {}
    if accesses:
        access = float(np.mean(interp)) * share_in / accesses
        if embedded:  # the statements' CPU is the process's: on its cores, inside the access
            per_call = c("db_cpu_time") / accesses / speed
        elif per_query is not None:
            per_call = c("db_queries") * per_query / accesses
        elif f"{db}.cpu_time" in r:  # the database tier's own record of the request (simulated)
            per_call = r[f"{db}.cpu_time"].to_numpy(dtype=float) / accesses
        else:
            per_call = np.clip(c("db_time") - c("db_cpu_time"), 0, None) / accesses
        db_dist = fitted(per_call, form)
        use: list[dict[str, Any]] = [cpu({"exponential": access})] if access > 0 else []
        if embedded and not apart:
            use.append(cpu(db_dist))
        else:
            use.append({"call": db})
            programs[db] = [{"cpu": db_dist}]
        steps.append({"loop": {"count": accesses, "steps": [{"use": {"pool": setting.connections, "steps": use}}]}})
        row |= {"app_per_access": access, "db_per_call": mean_of(db_dist)}
    steps.append({"release": setting.threads})
    row["app_first"] = mean_of(first)
    return row, {m.tier: steps, **programs}
