"""The `twin` strategy of online control (issue 42; docs/control.md, "twin"): a model of
the tier — its twin — re-calibrated every interval from what the interval showed, then
searched for the pool sizes that serve the observed load and mix best; the sizes move
only when the predicted gain passes a hysteresis, and every decision gives the
predicted figures behind it.

Written once, with the contract of the Rust controllers (`crates/control`: an
interval's observation in, the sizes and a reason out), and driven two ways: the
simulator's engine calls `decide` at each interval of a model whose `control.strategy`
is twin (`tierlab.simulate` builds it: `TwinController.of_model`), and `tierlab control
--strategy twin` calls it beside a live testbed. Both hand it to the Rust side
(`_core.simulate(controller=)`, `_core.Controller(spec, strategy=)`), which puts its
decisions through the same guards as the engine's own strategies (max_step, the revert
of a change after which errors rise).

Each decision simulates the twin a few dozen times (`TwinParams.horizon` seconds each,
one seed, started from the backlog observed): at the sizes in force at the observed load
and past it (their capacity); then each candidate at the observed load — or, in heavy
traffic (the sizes in force at HEAVY of their capacity or more), past it, for its
capacity, unless the capacities do not differ by the sizes — and a move twice more (three horizons each, another seed) to confirm it: the
cost of a decision is measured by `benchmarks/control_twin_cost.py`."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from .. import _core
from ..errors import InputError
from ..model import LoadedModel, load_model
from ..model.chain import ChainData
from ..model.spec import Cpu
from ..model.spec import Twin as TwinParams
from ..trace.schema import Summary, sent
from .engine import run_engine

Kind = Literal["threads", "connections"]
Bounds = dict[Kind, tuple[int, int]]

SEED = 1  # every simulation of the twin: the same observations give the same decision, and candidates meet the same arrivals
TIE = 0.01  # throughputs within 1% are equal: a short simulation does not tell them apart
STEP = 2.0  # the most one interval's hold-time ratio moves a demand scale, either way: one wild interval is not a new demand
START = "_twin_start"  # the twin's chain at the observed mix: a start state that issues no request, then one request a session
CONFIRM = 3  # a move is confirmed by simulating the sizes in force and the choice this many horizons, with another seed
WARM = 0.1  # seconds over which each simulation of the twin receives the observed backlog, before the observed rate
GROUPS = ("tier", "behind")  # the demands re-calibrated: the tier's own CPU, and the CPU of the tiers behind its connections
# Heavy traffic: the sizes in force at this share of their capacity or more. A queue
# there relaxes over ~1/(1 − ρ)² service times — at 0.8 already longer than a horizon's
# few hundred requests — so a short simulation from the observed backlog cannot tell the
# candidates apart (their difference is the long-run queue) while their capacities can:
# the twin then sizes for the most capacity (docs/control.md, "Heavy traffic").
HEAVY = 0.8
OVER = 1.5  # a capacity is simulated at this many times the observed rate: past the sizes in force's (at most 1.25 times it in heavy traffic) by a margin; a candidate with more serves at most this, more than the hysteresis above them


@dataclass(frozen=True)
class Times:
    """Per request: the seconds a thread and a connection were held per grant (Little's
    law, as `control::PoolObs::hold`), a thread's time outside the connections and their
    wait (its own work), and the tier's CPU busy per grant (the utilization law: core
    seconds per request, whatever the queues); NaN where not observed."""

    threads: float
    connections: float
    own: float
    cpu: float


def times(o: dict, overhead: Sequence[float] = ()) -> Times:
    """`Times` from an observation (`decide`'s, or a simulated summary's brought to the
    same form by `observed`): its pools' per-server figures over its `interval`, and its
    `cpu` (utilization per core, null where not measured), the CPU's work per request
    net of the slowdown its `overhead` coefficients put on each of the jobs it held
    (the threads at their own work, on average)."""
    pools, seconds = o["pools"], o["interval"]

    def hold(kind: str) -> float:
        p = pools.get(kind)
        return p["busy"] * seconds / p["acquired"] if p and p["acquired"] > 0 and p["busy"] > 0 else math.nan

    t, c = pools.get("threads"), pools.get("connections")
    own = math.nan
    # A request waiting for a connection, or holding one, holds its thread meanwhile.
    left = t["busy"] - (c["busy"] + c["queued"] if c else 0.0) if t else 0.0
    if t and c and t["acquired"] > 0:
        own = left * seconds / t["acquired"] if left > 0 else math.nan
    cpu = math.nan
    if t and t["acquired"] > 0 and o.get("cpu"):
        # Each of n jobs at the CPU is slowed by 1 + c1·(n−1) + …: the busy cores did
        # that much more than the requests' demands, the more the more threads worked.
        slowdown = 1 + sum(k * max(left - 1, 0.0) ** (i + 1) for i, k in enumerate(overhead))
        cpu = o["cpu"] * seconds / t["acquired"] / slowdown
    return Times(hold("threads"), hold("connections"), own, cpu)


@dataclass(frozen=True)
class _AtLoad:
    """The twin's engine input, and the parts of it an interval and a candidate change:
    the chain's start row, the pools, each CPU station with its group and own speed."""

    engine: dict
    cpus: list[tuple[dict, str, float]]
    pools: dict[str, dict]  # the tier's threads and connections pools, by kind
    row: list[float]  # the chain's start row: the mix
    columns: dict[str, int]  # each request type's column in it
    phases: list[dict]  # the workload's two phases: the backlog's burst, then the observed rate
    servers: int  # the tier's servers (an observation's pools are per server)


@dataclass(frozen=True)
class Offer:
    """What a simulation of the twin is offered: Poisson requests/s, after a burst of
    `backlog` requests per server within its first WARM seconds (the tier's own);
    `saturating`: past the capacity of the sizes simulated, to measure it."""

    rate: float
    backlog: float
    saturating: bool = False


@dataclass(frozen=True)
class Prediction:
    """The twin's figures for one configuration at an offer: the interval's load, or past
    its capacity (`saturated`: the throughput is then the capacity, the p99 the queue's
    growth, not a figure to read)."""

    sizes: dict[str, int]
    offered: float  # requests/s that arrived in the run's measured period (its own sample of the offer)
    throughput: float  # requests/s served ok
    p99: float  # seconds; inf when none finished
    times: Times
    saturated: bool = False

    def text(self) -> str:
        if self.saturated:
            return f"{_sizes(self.sizes)} → capacity {self.throughput:.1f} req/s"
        p99 = f"{self.p99 * 1e3:,.0f} ms" if math.isfinite(self.p99) else "none finished"
        return f"{_sizes(self.sizes)} → {self.throughput:.1f} req/s, p99 {p99}"


class TwinController:
    """The twin strategy over `bounds` of `tier`'s pools (threads, connections: one pool
    of each kind in the twin's tier). `decide(observation)` — the dict of a
    `control::Observation` — returns (sizes by pool kind, reason). `cores`: how many
    cores the observations' `cpu` is a share of (live: the machine's; simulated: the
    controlled tier's CPU station's) — default the twin's own station's."""

    def __init__(self, twin: LoadedModel, params: TwinParams, bounds: Bounds, tier: str | None = None, cores: int | None = None):
        # The twin's own control would run a controller inside each of its simulations.
        self.twin = twin.with_changes({"control": None}) if twin.spec.control is not None else twin
        tiers = self.twin.spec.tiers
        tier = tier or next((t for t, v in tiers.items() if any(p.kind == "threads" for p in v.pools.values())), None)
        if tier not in tiers:
            raise InputError(f"the twin ({self.twin.spec.name}) has no tier {tier!r} to control (tiers: {', '.join(tiers)})")
        self.tier, self.params = tier, params
        self.bounds: dict[str, tuple[int, int]] = {str(k): v for k, v in bounds.items()}
        for kind in self.bounds:
            names = [n for n, p in tiers[tier].pools.items() if p.kind == kind]
            if len(names) != 1:
                raise InputError(f"the twin's tier {tier!r} has {len(names)} {kind} pools ({', '.join(names) or 'none'}); the controller re-sizes exactly one")
        # The demands' scales (measured ÷ the twin's own), each a group of CPU stations.
        self.scale = dict.fromkeys(GROUPS, 1.0)
        # The tier's CPU as the observations' `cpu` reads it: its first CPU station.
        cpu = next((st for st in tiers[tier].stations.values() if st.kind == "cpu"), None)
        self._overhead = cast(Cpu, cpu).coefficients() if cpu is not None else []
        # Measured ÷ predicted CPU work per request: the shares times the cores they are of.
        own = cast(Cpu, cpu).cores if cpu is not None else 1
        self._cores = (cores or own) / own
        # Work behind the connections: a request's program on another tier with a CPU. A
        # database in the server's process (SQLite) has none: its connections' hold is
        # the tier's own work, and another tier's station, never visited, is no group.
        self._behind = any(
            t != tier and any(st.kind == "cpu" for st in tiers[t].stations.values()) for r in self.twin.spec.requests.values() for t in r.programs()
        )
        self._at = self._compiled()

    @classmethod
    def of_model(cls, model: LoadedModel) -> TwinController:
        """The controller a model's `control:` names (strategy twin): its twin the model
        itself, or the model file `control.twin.model` (relative to the model's)."""
        c = model.spec.control
        if c is None or c.strategy != "twin":
            raise InputError("control.strategy: the model's controller is not twin")
        twin = model if c.twin.model is None else load_model(model.base_dir / c.twin.model)
        tier = list(model.spec.tiers)[model.compiled.engine["control"]["tier"]]
        if tier not in twin.spec.tiers:
            raise InputError(f"control.twin.model: the twin {c.twin.model} has no tier {tier!r}, the one controlled")
        cpu = next((st for st in model.spec.tiers[tier].stations.values() if st.kind == "cpu"), None)
        return cls(twin, c.twin, {k: (lo, hi) for k, (lo, hi) in c.bounds.items()}, tier, cast(Cpu, cpu).cores if cpu is not None else None)

    def decide(self, o: dict) -> tuple[dict[str, int], str]:
        """The sizes for the interval `o` describes, and why."""
        in_force = {k: int(o["pools"][k]["size"]) for k in self.bounds if k in o["pools"]}
        if not in_force:
            return in_force, "twin: the bounded pools were not observed: nothing to size"
        if o["arrivals"] <= 0 or not o["mix"]:
            return in_force, "twin: nothing arrived in the interval: sizes held"
        known = {t: s for t, s in o["mix"].items() if s > 0 and t in self._at.columns}
        if not known:
            return in_force, f"twin: none of the request types seen ({', '.join(o['mix'])}) is the twin's: sizes held"
        threads = o["pools"].get("threads")
        load = Offer(o["arrivals"], threads["busy"] + threads["queued"] if threads else 0.0)
        at = self._at_mix(known, {k: int(p["size"]) for k, p in o["pools"].items() if k in self._at.pools})
        calibration = self._recalibrate(times(o, self._overhead), self._predict(at, in_force, load).times)
        head = f"twin at {load.rate:.1f} req/s ({calibration})"
        over = Offer(OVER * load.rate, load.backlog, saturating=True)
        capacity = self._predict(at, in_force, over)
        share = load.rate / capacity.throughput if capacity.throughput > 0 else math.inf
        if share >= HEAVY:
            return self._heavy(at, capacity, over, load, f"{head}: heavy traffic, the sizes in force at {share:.0%} of their capacity")
        return self._at_load(at, in_force, load, head)

    def _at_load(self, at: _AtLoad, in_force: dict[str, int], load: Offer, head: str, alike: bool = False) -> tuple[dict[str, int], str]:
        """The search at the observed load: every candidate simulated at it, the best
        (`_best`) moved to when it is worth it (`_worth_it`; `alike`: the candidates'
        capacities known to lie within the hysteresis), confirmed."""
        candidates = [self._predict(at, sizes, load) for sizes in self._candidates(in_force)]
        now = next(p for p in candidates if p.sizes == in_force)
        choice = self._best(candidates)
        move, said = self._confirmed(at, now, choice, load, lambda n, c: self._worth_it(n, c, alike), "best")
        return (choice.sizes if move else in_force), f"{head}: {said}"

    def _heavy(self, at: _AtLoad, now: Prediction, over: Offer, load: Offer, head: str) -> tuple[dict[str, int], str]:
        """Heavy traffic (HEAVY): the candidates' capacities at the observed mix, each
        simulated past it (`over`) and brought to the work per request of the run of
        the sizes in force (`_at_work`); the most capacity (within TIE), then the fewest
        threads and connections, moved to when it beats the sizes in force by more than
        the hysteresis — confirmed, as a move at the load is, over longer simulations
        with another seed. Where the capacities within the bounds all lie within the
        hysteresis of each other, the sizes do not decide the capacity (a resource no
        pool guards binds — live, the Python bookstore's one core: studies/results/
        control_live_heavy_quick) and no move could pass that test: the search at the
        load decides instead, by its p99 (`_at_load`)."""
        candidates = [now] + [_at_work(self._predict(at, sizes, over), now) for sizes in self._candidates(now.sizes) if sizes != now.sizes]
        inside = [p for p in candidates if self._within(p)]
        top, bottom = max(p.throughput for p in inside), min(p.throughput for p in inside)
        spread = top / bottom - 1 if bottom > 0 else math.inf
        if spread <= self.params.hysteresis:
            flat = f"the capacities within the bounds {bottom:.1f}–{top:.1f} req/s, within the hysteresis {self.params.hysteresis:.0%}: searched at the load"
            return self._at_load(at, now.sizes, load, f"{head}; {flat}", alike=True)
        choice = min((p for p in inside if p.throughput >= top * (1 - TIE)), key=lambda p: (sum(p.sizes.values()), sorted(p.sizes.items())))
        move, said = self._confirmed(at, now, choice, over, self._more_capacity, "most")
        return (choice.sizes if move else now.sizes), f"{head}: {said}"

    def _confirmed(
        self, at: _AtLoad, now: Prediction, choice: Prediction, offer: Offer, test: Callable[[Prediction, Prediction], tuple[bool, str]], word: str
    ) -> tuple[bool, str]:
        """Whether to move from the sizes in force to the choice by `test` (now, choice) →
        (move, why), and the figures behind it. The best of a few dozen short simulations
        beats the sizes in force by luck as often as by merit (each is a sample of the
        interval's load): a move stands only if both, simulated afresh over CONFIRM
        horizons with another seed (capacities brought to the same work), still pass."""
        move, why = test(now, choice)
        said = f"in force {now.text()}; {word} {choice.text()}; {why}"
        if move and self._within(now):
            now_again = self._predict(at, now.sizes, offer, CONFIRM)
            choice_again = self._predict(at, choice.sizes, offer, CONFIRM)
            if offer.saturating:
                choice_again = _at_work(choice_again, now_again)
            move, why = test(now_again, choice_again)
            said += f"; confirmed over {CONFIRM * self.params.horizon:g} s: in force {now_again.text()}, {word} {choice_again.text()}; {why}"
        return move, said

    def _more_capacity(self, now: Prediction, choice: Prediction) -> tuple[bool, str]:
        """Whether the choice's capacity beats the sizes in force's by more than the
        hysteresis (or the sizes in force are outside the bounds), and why."""
        h = self.params.hysteresis
        if choice.sizes == now.sizes:
            return False, "the sizes in force have the most: held"
        if not self._within(now):
            return True, "the sizes in force are outside the bounds: moved"
        gain = choice.throughput / now.throughput - 1 if now.throughput > 0 else math.inf
        return gain > h, f"capacity gain {gain:+.1%} {'>' if gain > h else '≤'} hysteresis {h:.0%}: {'moved' if gain > h else 'held'}"

    def _compiled(self) -> _AtLoad:
        """The twin's engine input for the intervals' loads, compiled once: one-request
        sessions arriving as Poisson (its own workload stands for another load),
        stationary, run for the horizon after a quarter of it as warm-up. Each interval
        then sets in place the chain's start row (the mix), and each simulation the rate,
        the pool sizes and the CPU speeds (`_at_mix`, `_predict`): validating and
        compiling the model each interval cost a quarter of a TPC-W decision."""
        spec, w = self.twin.spec, self.twin.spec.workload
        entry = w.entry or next(iter(spec.tiers))
        types = [t for t, r in spec.requests.items() if entry in r.programs()]
        chain = {"matrix": {START: dict.fromkeys(types, 1.0), **{t: {"END_OF_SESSION": 1.0} for t in types}}, "start": START, "normalize": True}
        workload = w.model_dump(mode="json", include={"entry", "session_weight"}, exclude_unset=True) | {
            "population": {"session_rate": 1.0},
            "chain": chain,
            "phases": [{"at": 0, "session_rate": 1.0}, {"at": WARM, "session_rate": 1.0}],
        }
        h = self.params.horizon
        changes = {"workload": workload, "run.duration": 1.25 * h, "run.warmup": 0.25 * h, "run.window": 0.25 * h, "run.seed": SEED, "run.records": False}
        loaded = self.twin.with_changes(changes)
        # Overload is a prediction here, not a mistake: the compiled input, without its
        # warnings (cached on a model made for this alone: changed in place, uncopied).
        engine = loaded.compiled.engine
        states = cast(ChainData, loaded.chain[0]).states
        # The engine's chain is the chain's matrix in its states' order (compile._chain).
        row = engine["workload"]["chain"]["matrix"][states.index(START)]
        cpus = [(s, "tier" if t["name"] == self.tier else "behind", s["speed"]) for t in engine["tiers"] for s in t["stations"] if s["kind"] == "cpu"]
        tier = next(t for t in engine["tiers"] if t["name"] == self.tier)
        pools = {k: next(p for p in tier["pools"] if p["name"] == n) for k, n in self._all_pools().items()}
        return _AtLoad(engine, cpus, pools, row, {t: states.index(t) for t in types}, engine["workload"]["phases"], spec.tiers[self.tier].servers)

    def _at_mix(self, mix: dict[str, float], sizes: dict[str, int]) -> _AtLoad:
        """The compiled twin at the interval's observed mix (of the twin's types), its
        pools at the sizes in force."""
        at = self._at
        total = sum(mix.values())
        at.row[:] = [0.0] * len(at.row)
        for t, share in mix.items():
            at.row[at.columns[t]] = share / total
        for kind, size in sizes.items():
            at.pools[kind]["size"] = size
        return at

    def _all_pools(self) -> dict[str, str]:
        """The tier's threads and connections pools by kind (bounded or not)."""
        pools = self.twin.spec.tiers[self.tier].pools.items()
        return {k: n for k in ("threads", "connections") for n, p in pools if p.kind == k}

    def _predict(self, at: _AtLoad, sizes: dict[str, int], offer: Offer, horizons: int = 1) -> Prediction:
        """The twin at `sizes` offered `offer` (started warm: its backlog arrives first),
        its demands at the current scales (a CPU station's speed divided by its group's
        scale), measured over `horizons` horizons (more than one: a confirmation, with
        its own seed) after a quarter of one. A saturating offer is measured from the
        start instead, its burst enough to fill the threads at once: the run's figures
        are of the requests that arrived in its measured period, and past the capacity
        those served in a period after a warm-up are partly the warm-up's."""
        run, h = at.engine["run"], self.params.horizon
        for kind, size in sizes.items():
            at.pools[kind]["size"] = size
        burst = offer.backlog
        if offer.saturating:
            run["duration"], run["warmup"] = horizons * h, 0.0
            burst += at.pools["threads"]["size"] if "threads" in at.pools else 0
        else:
            run["duration"], run["warmup"] = (1 + 4 * horizons) * h / 4, h / 4
        run["seed"] = SEED + horizons - 1
        at.engine["workload"]["population"]["session_rate"] = offer.rate
        at.phases[0]["session_rate"] = offer.rate + burst * at.servers / WARM
        at.phases[1]["session_rate"] = offer.rate
        for station, group, speed in at.cpus:
            station["speed"] = speed / self.scale[group]
        summary = json.loads(run_engine(_core.simulate, at.engine, None, self.twin.source)["summary"])
        o = observed(summary, self.tier, self._all_pools())
        p99 = o["response_time"]["p99"] if o["response_time"] else math.inf
        return Prediction(dict(sizes), o["arrivals"], o["throughput"], p99, times(o, self._overhead), offer.saturating)

    def _recalibrate(self, seen: Times, twin: Times) -> str:
        """Move the demands' scales towards measured ÷ predicted (each interval by
        `smoothing` of the way, in logarithms: an exponential average of the ratios, one
        interval's ratio capped at `STEP`). With the connections observed and tiers
        behind them, the connection hold re-scales those tiers and a thread's own time
        the tier; otherwise the thread hold (or the connection hold) re-scales both. With
        the tier's CPU observed, its work per request re-scales the tier instead."""
        split = self._behind and all(math.isfinite(x) for x in (seen.connections, twin.connections, seen.own, twin.own))
        if split:
            ratios = {"tier": seen.own / twin.own, "behind": seen.connections / twin.connections}
        else:
            pair = (seen.threads, twin.threads) if math.isfinite(seen.threads * twin.threads) else (seen.connections, twin.connections)
            one = pair[0] / pair[1] if math.isfinite(pair[0] * pair[1]) and pair[1] > 0 else math.nan
            ratios = dict.fromkeys(GROUPS, one)
        if math.isfinite(seen.cpu) and twin.cpu > 0:
            # The tier's CPU measured: its work per request (the utilization law) is the
            # tier's demand whatever waits for it; a hold time near saturation is mostly
            # waiting — for the CPU among many threads, behind a backlog — which an
            # interval's twin, simulated for seconds, reproduces only in part.
            ratios["tier"] = seen.cpu / twin.cpu * self._cores
        for group, r in ratios.items():
            if math.isfinite(r) and r > 0:
                self.scale[group] *= min(STEP, max(1 / STEP, r)) ** self.params.smoothing
        shown = GROUPS if self._behind else ("tier",)
        return "demand " + ", ".join(f"{g} ×{self.scale[g]:.2f}" for g in shown)

    def _candidates(self, in_force: dict[str, int]) -> list[dict[str, int]]:
        """The sizes searched: a coarse grid between the bounds (`grid` sizes per pool,
        geometric: relative steps matter), the neighbours of the sizes in force (±¼ of
        each, at least 1), and the sizes in force themselves (even outside the bounds:
        they are what a move is weighed against)."""
        kinds = list(in_force)
        grid = [_geometric(*self.bounds[k], self.params.grid) for k in kinds]
        near = [_near(in_force[k], *self.bounds[k]) for k in kinds]
        out = [dict(zip(kinds, c)) for c in itertools.chain(itertools.product(*grid), itertools.product(*near))]
        out.append(dict(in_force))
        return list({tuple(sorted(c.items())): c for c in out}.values())

    def _best(self, candidates: list[Prediction]) -> Prediction:
        """Within the bounds: of those whose p99 keeps under the SLO by the hysteresis (a
        margin, so that the next interval's noise does not put it over), the highest
        throughput (within `TIE`), then the fewest threads and connections; if none
        does, the highest throughput, then the lowest p99."""
        h, slo = self.params.hysteresis, self.params.slo_p99
        inside = [p for p in candidates if self._within(p)]
        under = [p for p in inside if p.p99 <= slo / (1 + h)]
        pool = under or inside
        top = max(p.throughput for p in pool)
        level = [p for p in pool if p.throughput >= top * (1 - TIE)]
        if under:
            return min(level, key=lambda p: (sum(p.sizes.values()), p.p99, sorted(p.sizes.items())))
        return min(level, key=lambda p: (p.p99, sum(p.sizes.values()), sorted(p.sizes.items())))

    def _within(self, p: Prediction) -> bool:
        """Whether `p`'s sizes are within the bounds."""
        return all(lo <= p.sizes[k] <= hi for k, (lo, hi) in self.bounds.items() if k in p.sizes)

    def _worth_it(self, now: Prediction, choice: Prediction, alike: bool) -> tuple[bool, str]:
        """Whether to move from the sizes in force to the choice, and why: the sizes in
        force outside the bounds; their p99 over the SLO by more than the hysteresis
        and the choice's under it; otherwise a predicted gain — in throughput, or with
        the SLO missed either way and both keeping up with the load their runs drew (or
        their capacities known `alike`) in p99 — above the hysteresis."""
        h, slo = self.params.hysteresis, self.params.slo_p99
        if choice.sizes == now.sizes:
            return False, "the sizes in force are the best: held"
        if not self._within(now):
            return True, "the sizes in force are outside the bounds: moved"
        if choice.p99 <= slo and now.p99 > slo * (1 + h):
            return True, f"p99 over the SLO {slo * 1e3:,.0f} ms by more than the hysteresis {h:.0%} in force, under it at the best: moved"
        gain = choice.throughput / now.throughput - 1 if now.throughput > 0 else (math.inf if choice.throughput > 0 else 0.0)
        what = "throughput"
        # A p99 where the twin's queue grows over the horizon (its throughput behind the
        # load) says how long the horizon was, not how good the sizes are: a capacity
        # 2% higher shortens it by (load − capacity)'s share, tens of percent near
        # saturation. There the throughput alone compares them. Kept up with is the load
        # the run drew, not the observed rate: a confirmation's seed draws its own
        # arrivals, over 30 s a few % from the rate (its sd 1/√(rate × 30 s)). Capacities
        # measured alike (`_heavy`) cannot confound the p99 so: it is then compared as is.
        keep_up = alike or all(p.throughput >= p.offered * (1 - TIE) for p in (now, choice))
        if keep_up and now.p99 > slo and choice.p99 > slo:
            p99_gain = now.p99 / choice.p99 - 1 if math.isfinite(choice.p99) else 0.0
            if p99_gain > gain:
                gain, what = p99_gain, "p99"
        if gain > h:
            return True, f"{what} gain {gain:+.1%} > hysteresis {h:.0%}: moved"
        return False, f"{what} gain {gain:+.1%} ≤ hysteresis {h:.0%}: held"


def _at_work(p: Prediction, reference: Prediction) -> Prediction:
    """A saturated prediction's capacity at the CPU work per request `reference`'s run drew
    (the tier's, net of the overhead): a run's capacity moves with the work its requests
    happened to bring — TPC-W's Search is 25 times an Item's — while the work served per
    second does not; compared at the same work, two sizes' capacities differ by their
    sizes alone (a control variate: at studies/control.py's load-step peak the ratio of
    (12, 15)'s capacity to (20, 15)'s over 20 seeds has sd 8.4% as run, 1.4% at the same
    work: investigations/control/results/capacity_noise). Unchanged where either run has
    no CPU figure."""
    w, ref = p.times.cpu, reference.times.cpu
    if math.isfinite(w) and math.isfinite(ref) and w > 0 and ref > 0:
        return replace(p, throughput=p.throughput * w / ref)
    return p


def observed(summary: Summary, tier: str, pools: dict[str, str]) -> dict:
    """A simulated run's measured period as one interval's observation of `tier` (its
    `pools` by kind → name; each pool's figures per server, their mean), the shape
    `decide` is fed: how the twin reads its own predictions, and how a test or a
    benchmark makes an interval of a known system."""
    seconds, servers = summary["measured_seconds"], summary["tiers"][tier]["servers"]
    counts = {t: sent(v["requests"]) for t, v in summary["types"].items()}
    total, r = sum(counts.values()), summary["requests"]
    rt = summary["response_time"]

    def pool(name: str) -> dict[str, float]:
        p: list[dict[str, Any]] = [dict(s["pools"][name]) for s in servers]
        mean = lambda f: sum(float(x[f]) for x in p) / len(p)  # noqa: E731
        return {"size": p[0]["size"], "busy": mean("mean_busy"), "queued": mean("mean_queued"), "acquired": mean("acquired"), "rejected": mean("rejected")}

    return {
        "interval": seconds,
        "arrivals": total / seconds,
        "mix": {t: c / total for t, c in counts.items() if c},
        "throughput": summary["throughput"],
        "errors": (r["rejected"] + r["timeout"] + r["error"]) / seconds,
        "response_time": {k: rt[k] for k in ("mean", "p50", "p90", "p99")} if rt else None,
        "pools": {kind: pool(name) for kind, name in pools.items()},
        "cpu": _cpu(servers),
    }


def _cpu(servers: Sequence[Mapping[str, Any]]) -> float | None:
    """The mean utilization per core of the servers' first CPU station (the engine's
    observation reads the same one), None if the tier has none."""
    cpus = [next((st["utilization"] for st in s["stations"].values() if st["kind"] == "cpu"), None) for s in servers]
    return None if None in cpus else sum(cast(list[float], cpus)) / len(cpus)


def _geometric(lo: int, hi: int, n: int) -> list[int]:
    """`n` sizes from `lo` to `hi`, evenly spaced in logarithm, rounded (fewer where
    they round alike)."""
    return sorted({round(lo * (hi / lo) ** (i / (n - 1))) for i in range(n)})


def _near(size: int, lo: int, hi: int) -> list[int]:
    """`size` and its neighbours a quarter of it away (at least 1), within the bounds."""
    step = max(1, round(size / 4))
    return sorted({min(hi, max(lo, s)) for s in (size - step, size, size + step)})


def _sizes(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(sizes.items()))
