"""Turn a validated model into the engine's input: names become indices, and the
checks that need the whole model run here (pools and tiers that exist, balanced
acquire/release, call cycles, the chain, an open workload beyond capacity)."""

from __future__ import annotations

from dataclasses import dataclass

from .._core import MAX_POOLS
from . import dist
from .burst import fit_mmpp
from .chain import ChainData, reweighted, visit_mix
from .limits import run_size_problems
from .spec import (
    Acquire,
    AfterRequests,
    AfterTime,
    Call,
    Closed,
    Contention,
    Control,
    Cpu,
    CpuStep,
    Delay,
    Disk,
    DiskStep,
    Loop,
    Model,
    Pool,
    Release,
    Tier,
    Transaction,
    Transfer,
    Use,
    WaitQueue,
)


class _Problems(list):
    def add(self, path: str, msg: str) -> None:
        if (path, msg) not in self:  # a model-wide problem is met once per program
            self.append((path, msg))


def _names(d) -> str:
    return ", ".join(d) or "none"


@dataclass
class Compiled:
    engine: dict
    problems: list[tuple[str, str]]
    warnings: list[str]
    # Sessions/s at which the busiest CPU would reach 100% (no overhead counted): an
    # upper bound on the session throughput; None if sessions never end.
    session_rate_bound: float | None


def compile_model(m: Model, chain_read: tuple[ChainData | None, list[tuple[str, str]]]) -> Compiled:
    """`chain_read`: the workload's chain as `read_chain` read it, and its problems."""
    bad = _Problems()
    tiers = list(m.tiers)
    tier_ix = {t: i for i, t in enumerate(tiers)}

    engine_tiers = []
    for tname, t in m.tiers.items():
        for p, s in t.pools.items():
            if s.retransmit is not None and s.max_queue is None and s.timeout != 0:
                bad.add(f"tiers.{tname}.pools.{p}.retransmit", "a pool that lets everyone wait never drops an attempt; set max_queue (the accept backlog)")
        if len(t.pools) > MAX_POOLS:
            bad.add(f"tiers.{tname}.pools", f"at most {MAX_POOLS} pools per tier")
        engine_tiers.append(
            {
                "name": tname,
                "servers": t.servers,
                "dispatch": _dispatch(tname, t, bad),
                "stateful": t.session_state is not None,
                "gc": t.gc.model_dump() if t.gc else None,
                "interpreter_lock": t.interpreter_lock.model_dump() if t.interpreter_lock else None,
                "pools": [
                    {
                        "name": p,
                        "kind": s.kind,
                        "size": s.size,
                        "timeout": s.timeout,
                        "max_queue": s.max_queue,
                        "discipline": s.queue,
                        "retransmit": s.retransmit.model_dump() if s.retransmit else None,
                        "handoff": _handoff(tname, t, p, s, bad),
                        "hold": s.hold,
                    }
                    for p, s in t.pools.items()
                ],
                "stations": [
                    {"kind": "cpu", "name": n, "cores": s.cores, "speed": s.speed, "overhead": s.coefficients()}
                    if s.kind == "cpu"
                    else {"kind": "disk", "name": n, "iops": s.iops, "hit_ratio": s.hits(), "channels": s.channels, "constant_service": s.service == "constant"}
                    for n, s in t.stations.items()
                ],
            }
        )

    engine_types = []
    for tyname, ty in m.requests.items():
        programs = ty.programs()
        slots: list = [None] * len(tiers)
        for tname, steps in programs.items():
            path = f"requests.{tyname}.{tname}"
            if tname not in tier_ix:
                bad.add(path, f"{tname!r} is not a tier (tiers: {_names(tiers)})")
                continue
            ctx = _Program(m, tyname, tname, {b.pool for b in _blocks(steps)}, set(), set(), bad)
            slots[tier_ix[tname]] = _with_session_fetch(m, tyname, tname, _steps(ctx, steps, path), bad)
        for tname in programs:
            _check_calls(m, tyname, tname, programs, [tname], f"requests.{tyname}.{tname}", bad)
        engine_types.append({"name": tyname, "priority": ty.priority, "programs": slots})

    w = m.workload
    entry = w.entry or tiers[0]
    if entry not in tier_ix:
        bad.add("workload.entry", f"{entry!r} is not a tier (tiers: {_names(tiers)})")
        entry = tiers[0]
    _session_pools(m, entry, bad)
    chain, chain_bad = chain_read
    for where, problem in chain_bad:
        bad.add(where, problem)
    busy_per_session: dict = {}
    engine_chain = None
    if chain is not None and not chain_bad:
        engine_chain, roles = _chain(m, chain, entry, bad)
        if not bad:
            mix, per_session = visit_mix(chain, chain.index(w.chain.start), roles)
            if isinstance(w.session_end, AfterRequests):
                per_session = min(per_session, dist.mean(w.session_end.after_requests))
            busy, steps_each = _per_request(m, mix, entry)
            if per_session < float("inf"):
                busy_per_session = {k: v * per_session for k, v in busy.items()}
            for where, problem in run_size_problems(m, busy, steps_each, per_session):
                bad.add(where, problem)

    end: dict = {"kind": "chain"}
    if isinstance(w.session_end, AfterRequests):
        end = {"kind": "after_requests", "count": dist.engine(w.session_end.after_requests)}
    elif isinstance(w.session_end, AfterTime):
        at = w.session_end.after_time.at
        at_ix = None
        if at is not None:
            if chain is None or at not in chain.states:
                bad.add("workload.session_end.after_time.at", f"{at!r} is not a state of the chain")
            else:
                at_ix = chain.index(at)
        end = {"kind": "after_time", "duration": dist.engine(w.session_end.after_time.duration), "at_state": at_ix}

    population = (
        {"kind": "closed", "clients": w.population.clients} if isinstance(w.population, Closed) else {"kind": "open", "session_rate": w.population.session_rate}
    )
    r = m.run
    if r.warmup >= r.duration:
        bad.add("run.warmup", f"warm-up ({r.warmup} s) must be shorter than the duration ({r.duration} s)")
    if r.window > r.duration:
        bad.add("run.window", f"the monitoring window ({r.window} s) is longer than the run ({r.duration} s); lower run.window")
    engine = {
        "tiers": engine_tiers,
        "links": [
            {
                "name": n,
                "bandwidth": l.bandwidth / 8,
                "delay": dist.engine(l.delay),
                "shared": l.shared,
                "loss": l.loss,
                "mss": l.mss,
                "rto": l.rto,
                "initial_window": l.initial_window,
            }
            for n, l in m.links.items()
        ],
        "types": engine_types,
        "workload": {
            "entry_tier": tier_ix[entry],
            "population": population,
            "chain": engine_chain,
            "think": dist.engine(w.think),
            "weight": dist.engine(w.session_weight),
            "end": end,
            "burst": _burst(w, bad),
        }
        | ({"phases": _phases(m, chain if not chain_bad else None, bad)} if w.phases else {}),
        "run": {"duration": r.duration, "warmup": r.warmup, "seed": r.seed, "window": r.window, "records": r.records},
    }
    if m.control is not None:
        engine["control"] = _control(m, m.control, bad)
    bound = 1 / max(busy_per_session.values()) if busy_per_session else None
    return Compiled(engine, list(bad), _overload(m, busy_per_session) + _idle_sync(m), bound)


def _control(m: Model, c: Control, bad: _Problems) -> dict | None:
    """The engine's `control`: the tier by its index, each bounded kind's pool found
    (one of the kind), the interval a whole number of windows."""
    tiers = list(m.tiers)
    tname = c.tier or next((t for t in tiers if any(p.kind == "threads" for p in m.tiers[t].pools.values())), None)
    if tname not in m.tiers:
        bad.add("control.tier", f"{tname!r} is not a tier (tiers: {_names(tiers)})" if tname else "no tier has a threads pool; name the tier")
        return None
    pools = m.tiers[tname].pools
    for kind, (lo, hi) in c.bounds.items():
        of_kind = [n for n, p in pools.items() if p.kind == kind]
        if len(of_kind) != 1:
            bad.add(
                f"control.bounds.{kind}", f"tier {tname!r} has {len(of_kind)} {kind} pools ({_names(of_kind)}); a controller re-sizes exactly one of a kind"
            )
        if lo > hi:
            bad.add(f"control.bounds.{kind}", f"[{lo}, {hi}]: the least size is above the greatest")
    if c.strategy == "gradient" and "threads" not in c.bounds:
        bad.add("control.bounds", "the gradient strategy re-sizes the thread pool; give bounds.threads, e.g. [2, 64]")
    windows = c.interval / m.run.window
    if round(windows) < 1 or abs(windows - round(windows)) > 1e-9 * windows:
        bad.add("control.interval", f"{c.interval} s is not a whole number of monitoring windows (run.window {m.run.window} s)")
    return {
        "tier": tiers.index(tname),
        "interval": c.interval,
        "bounds": {k: list(v) for k, v in c.bounds.items()},
        "strategy": c.engine_strategy(),
        "max_step": c.max_step,
        "revert": c.revert.model_dump(),
        "dwell": c.dwell,
    }


def _phases(m: Model, chain: ChainData | None, bad: _Problems) -> list[dict]:
    """The engine's workload phases, in time order: each one's rate, its chain's matrix
    (the chain as read, reweighted by the phase's `reweight` as `workload.chain.reweight`
    would be) and its added delays by tier index. Only an open population's rate changes."""
    w, r, tiers = m.workload, m.run, list(m.tiers)
    out = []
    for i, p in enumerate(w.phases):
        path = f"workload.phases[{i}]"
        if i and p.at <= w.phases[i - 1].at:
            bad.add(f"{path}.at", f"must be increasing: {p.at} s is not after phases[{i - 1}].at ({w.phases[i - 1].at} s)")
        if p.at >= r.duration:
            bad.add(f"{path}.at", f"{p.at} s is not before the run's end (run.duration {r.duration} s); move the phase earlier or lengthen the run")
        phase: dict = {"at": p.at}
        if p.session_rate is not None:
            if isinstance(w.population, Closed):
                bad.add(
                    f"{path}.session_rate",
                    "phases change an open population's session rate, and this one is closed (workload.population.clients); "
                    "give the population a session_rate, or drop the phase's",
                )
            phase["session_rate"] = p.session_rate
        if p.reweight is not None and chain is not None:
            matrix, problems = reweighted(chain.states, chain.rows, p.reweight, f"{path}.reweight")
            for where, problem in problems:
                bad.add(where, problem)
            phase["matrix"] = matrix.tolist()
        for tname, seconds in p.delay.items():
            if tname not in m.tiers:
                bad.add(f"{path}.delay.{tname}", f"{tname!r} is not a tier (tiers: {_names(tiers)})")
            else:
                phase.setdefault("delay", []).append({"tier": tiers.index(tname), "seconds": seconds})
        out.append(phase)
    return out


def _burst(w, bad: _Problems) -> dict | None:
    """The workload's MMPP as rate multipliers and phase-leaving rates (None = Poisson)."""
    b = w.burstiness
    if b is None or b.dispersion == 1:
        return None
    if isinstance(w.population, Closed):
        think = dist.mean(w.think)
        if think <= 0:
            bad.add("workload.burstiness", "a closed population is made bursty through its think times; give workload.think a positive mean")
            return None
        base = w.population.clients / think
    else:
        base = w.population.session_rate
    m = fit_mmpp(base, b.dispersion, b.burst_share, b.ratio)
    return {"factor": [r / base for r in m.rates], "leave": list(m.leave)}


def _dispatch(tname: str, t, bad: _Problems) -> dict:
    """A tier's dispatch point as the engine's Dispatcher (policy as crates/policy)."""
    d, path = t.dispatch, f"tiers.{tname}.dispatch"
    policy: dict = {"policy": d.policy}
    if d.policy == "round_robin":
        if d.weights is not None and (len(d.weights) != t.servers or sum(d.weights) == 0 or d.topology == "hierarchical" and d.dispatchers > 1):
            bad.add(f"{path}.weights", f"give {t.servers} weights (one per server), not all zero, with a shared topology")
        policy["weights"] = d.weights or []
    elif d.policy == "affinity_cap":
        policy["cap"] = d.cap
    elif d.policy in ("redal", "redal_w", "redal_n"):
        test = "in_progress" if d.policy == "redal_n" else "arrivals"
        policy = {
            "policy": "redal",
            "wait": d.policy == "redal_w",
            "test": test,
            **d.model_dump(include={"alpha", "slice", "think_time", "window", "intervals", "interval", "threshold"}),
        }
    if d.topology == "hierarchical" and d.dispatchers > t.servers:
        bad.add(f"{path}.dispatchers", f"{d.dispatchers} dispatchers cannot each own a block of {t.servers} servers; use topology: shared or fewer dispatchers")
    queue = getattr(d, "queue", None) or WaitQueue()
    return {
        "policy": policy,
        "dispatchers": d.dispatchers,
        "hierarchical": d.topology == "hierarchical",
        "sync_interval": d.sync.interval,
        "sync_delay": d.sync.delay,
        "queue": queue.size,
        "queue_timeout": queue.timeout,
    }


# Policies that keep no load metrics, so have nothing to exchange.
_NO_METRICS = ("round_robin", "affinity", "random")


def _idle_sync(m: Model) -> list[str]:
    """A `sync` given where no metrics are exchanged: it changes nothing, say so."""
    out = []
    for tname, t in m.tiers.items():
        d = t.dispatch
        if "sync" not in d.model_fields_set:
            continue
        why = (
            "one dispatcher has no one to tell"
            if d.dispatchers == 1
            else "hierarchical dispatchers each own their servers"
            if d.topology == "hierarchical"
            else f"{d.policy} keeps no load metrics"
            if d.policy in _NO_METRICS
            else None
        )
        if why:
            out.append(f"tiers.{tname}.dispatch.sync has no effect: {why}, so no metrics are exchanged; remove it")
    return out


def _with_session_fetch(m: Model, ty: str, tname: str, program: list[dict], bad: _Problems) -> list[dict]:
    """On a stateful tier the session's state is loaded right after the visit's first
    thread (or at once if it takes none): the fetch steps run if it is elsewhere."""
    state = m.tiers[tname].session_state
    if state is None:
        return program
    ctx = _Program(m, ty, tname, set(), set(), set(), bad)
    fetch = {"op": "session", "body": _steps(ctx, state.fetch, f"tiers.{tname}.session_state.fetch")}
    threads = {i for i, p in enumerate(m.tiers[tname].pools.values()) if p.kind == "threads"}
    at = next((i + 1 for i, s in enumerate(program) if s["op"] == "acquire" and s["pool"] in threads), 0)
    return [*program[:at], fetch, *program[at:]]


@dataclass
class _Program:
    """What resolving one program needs: where it runs, the pools its `use` blocks
    take, and — while walking it — the pools held and the transactions open."""

    m: Model
    ty: str
    tname: str
    used: set[str]
    held: set[str]
    tx: set[str]
    bad: _Problems


_SESSION_HELD = "pool {pool!r} is held by sessions (hold: session): a session takes it before its first request's steps, and no step names it"


def _session_pools(m: Model, entry: str, bad: _Problems) -> None:
    """A pool held by sessions is taken as a session's request enters its tier: the
    entry tier, of one server (a session's connection is to the server its requests
    reach), one such pool, kind other (waiting for it is neither a thread's wait nor a
    database connection's), with no acquisition CPU (nothing would charge it)."""
    for tname, t in m.tiers.items():
        held = [p for p, s in t.pools.items() if s.hold == "session"]
        for p in held:
            s, at = t.pools[p], f"tiers.{tname}.pools.{p}.hold"
            if tname != entry:
                bad.add(at, f"a pool held by sessions belongs to the entry tier ({entry!r}), where sessions connect")
            elif t.servers != 1:
                bad.add(at, f"a pool held by sessions needs a tier of one server (this one has {t.servers}): sessions reach a cluster through a proxy tier")
            elif len(held) > 1:
                bad.add(at, f"one pool held by sessions per tier (found {_names(held)})")
            elif s.kind != "other":
                bad.add(
                    f"tiers.{tname}.pools.{p}.kind",
                    "a pool held by sessions is kind other: waiting for it is neither a thread's wait nor a database connection's",
                )
            elif s.acquire_cpu is not None:
                bad.add(f"tiers.{tname}.pools.{p}.acquire_cpu", "a pool held by sessions has no acquisition CPU (no step takes it); drop acquire_cpu")


def _blocks(steps: list):
    """The bodies of the `use`/`transaction` blocks of a program, at any depth."""
    for s in steps:
        if isinstance(s, (Use, Transaction)):
            body = s.use if isinstance(s, Use) else s.transaction
            yield body
            yield from _blocks(body.steps)
        elif isinstance(s, Loop):
            yield from _blocks(s.loop.steps)


def _children(s) -> list | None:
    """The nested steps of a block step, or None."""
    if isinstance(s, Loop):
        return s.loop.steps
    if isinstance(s, (Use, Transaction)):
        return (s.use if isinstance(s, Use) else s.transaction).steps
    return None


def _steps(c: _Program, steps: list, path: str) -> list[dict]:
    """Resolve one program, tracking which pools are held to catch unbalanced use."""
    m, tname, bad, held = c.m, c.tname, c.bad, c.held
    tier = m.tiers[tname]
    out = []
    for i, s in enumerate(steps):
        p = f"{path}[{i}]"
        if isinstance(s, (Acquire, Release)):
            pool = s.acquire if isinstance(s, Acquire) else s.release
            if pool not in tier.pools:
                bad.add(p, f"pool {pool!r} does not exist in tier {tname!r} (pools: {_names(tier.pools)})")
                continue
            if tier.pools[pool].hold == "session":
                bad.add(p, _SESSION_HELD.format(pool=pool))
                continue
            if pool in c.used:
                bad.add(p, f"pool {pool!r} is taken by `use` blocks in this program; use blocks only, or acquire/release only")
                continue
            if isinstance(s, Acquire):
                if pool in held:
                    bad.add(p, f"pool {pool!r} is already held here; release it first (a request holds one token per pool)")
                held.add(pool)
                out.append({"op": "acquire", "pool": list(tier.pools).index(pool), "cost": _acquire_cost(c, pool), "exclusive": s.exclusive})
            else:
                if pool not in held:
                    bad.add(p, f"release of {pool!r}, which is not held at this point; acquire it earlier or remove this step")
                held.discard(pool)
                out.append({"op": "release", "pool": list(tier.pools).index(pool)})
        elif isinstance(s, (Use, Transaction)):
            out += _block(c, s, p)
        elif isinstance(s, (CpuStep, DiskStep)):
            kind = "cpu" if isinstance(s, CpuStep) else "disk"
            candidates = [n for n, st in tier.stations.items() if st.kind == kind]
            name = s.on or (candidates[0] if len(candidates) == 1 else None)
            if name is None or name not in candidates:
                why = (
                    f"{s.on!r} is not a {kind} station of tier {tname!r}"
                    if s.on
                    else (
                        f"tier {tname!r} has no {kind} station; add one under tiers.{tname}.stations"
                        if not candidates
                        else f"tier {tname!r} has several {kind} stations; say which with `on:`"
                    )
                )
                bad.add(p, why + f" ({kind} stations: {_names(candidates)})")
                continue
            ix = list(tier.stations).index(name)
            if isinstance(s, CpuStep):
                out.append({"op": "cpu", "station": ix, "demand": dist.engine(s.cpu), "contention": _contention(c, s.contention, None, f"{p}.contention")})
            else:
                out.append({"op": "disk", "station": ix, "accesses": dist.engine(s.disk)})
        elif isinstance(s, Call):
            if s.call not in m.tiers:
                bad.add(p, f"{s.call!r} is not a tier (tiers: {_names(m.tiers)})")
            elif s.call not in m.requests[c.ty].programs():
                bad.add(p, f"request type {c.ty!r} has no program for tier {s.call!r}; add requests.{c.ty}.{s.call}")
            else:
                out.append({"op": "call", "tier": list(m.tiers).index(s.call)})
        elif isinstance(s, Loop):
            before = set(held)
            body = _steps(c, s.loop.steps, f"{p}.loop.steps")
            if held != before:
                bad.add(p, "a loop body must give back every pool it acquires (and release none held before it)")
                held.clear()
                held.update(before)
            out.append({"op": "loop", "count": dist.engine(s.loop.count), "body": body})
        elif isinstance(s, Delay):
            out.append({"op": "delay", "time": dist.engine(s.delay), "contention": _contention(c, s.contention, None, f"{p}.contention")})
        elif isinstance(s, Transfer):
            if s.transfer.link not in m.links:
                bad.add(p, f"link {s.transfer.link!r} does not exist (links: {_names(m.links)}); define it under `links`")
            else:
                out.append({"op": "transfer", "link": list(m.links).index(s.transfer.link), "bytes": dist.engine(s.transfer.bytes)})
    return out


def _block(c: _Program, s: Use | Transaction, p: str) -> list[dict]:
    """A `use` or `transaction` block as engine steps. `get` takes the visit's cached
    token or a new one, `close` marks it idle, `drop` gives an idle one back: the pool's
    caching mode decides where the drops go."""
    kind = "use" if isinstance(s, Use) else "transaction"
    body = s.use if isinstance(s, Use) else s.transaction
    pools = c.m.tiers[c.tname].pools
    if body.pool not in pools:
        c.bad.add(f"{p}.{kind}.pool", f"pool {body.pool!r} does not exist in tier {c.tname!r} (pools: {_names(pools)})")
        return []
    if pools[body.pool].hold == "session":
        c.bad.add(f"{p}.{kind}.pool", _SESSION_HELD.format(pool=body.pool))
        return []
    if body.pool in (c.held if kind == "use" else c.tx):
        c.bad.add(p, f"a {kind} of {body.pool!r} inside another one; {kind} blocks of one pool do not nest")
        return []
    ix = {"pool": list(pools).index(body.pool)}
    transaction_wide = pools[body.pool].caching == "transaction"
    inside = c.held if kind == "use" else c.tx
    inside.add(body.pool)
    steps = _steps(c, body.steps, f"{p}.{kind}.steps")
    inside.discard(body.pool)
    if kind == "use":
        steps = [{"op": "get", **ix, "cost": _acquire_cost(c, body.pool)}, *steps, {"op": "close", **ix}]
    if transaction_wide and body.pool not in c.tx:
        steps.append({"op": "drop", **ix})
    return steps


def _acquire_cost(c: _Program, pool: str) -> list[dict]:
    """The engine steps one acquisition of `pool` costs: its `acquire_cpu` on the tier's CPU."""
    spec = c.m.tiers[c.tname].pools[pool]
    demand = spec.acquire_cpu
    if demand is None:
        if spec.acquire_contention is not None:
            c.bad.add(f"tiers.{c.tname}.pools.{pool}.acquire_contention", "grows `acquire_cpu`, which this pool lacks; give it one or drop acquire_contention")
        return []
    cpu = _tier_cpu(c.tname, c.m.tiers[c.tname], f"pools.{pool}.acquire_cpu", c.bad)
    if cpu is None:
        return []
    growth = _contention(c, spec.acquire_contention, pool, f"tiers.{c.tname}.pools.{pool}.acquire_contention")
    return [{"op": "cpu", "station": cpu, "demand": dist.engine(demand), "contention": growth}]


def _handoff(tname: str, t: Tier, pool: str, s: Pool, bad: _Problems) -> dict | None:
    """The engine's hand-off of `pool`: a delay, or the waiter's run on the tier's CPU."""
    if s.handoff is not None:
        return {"delay": dist.engine(s.handoff)}
    if s.handoff_cpu is None:
        return None
    cpu = _tier_cpu(tname, t, f"pools.{pool}.handoff_cpu", bad)
    return None if cpu is None else {"cpu": {"station": cpu, "demand": dist.engine(s.handoff_cpu)}}


def _tier_cpu(tname: str, t: Tier, field: str, bad: _Problems) -> int | None:
    """The index of the tier's one CPU station, which a pool's CPU work (`field`) runs on;
    None (and a problem) if the tier has none or several."""
    cpus = [i for i, st in enumerate(t.stations.values()) if st.kind == "cpu"]
    if len(cpus) != 1:
        bad.add(
            f"tiers.{tname}.{field}",
            f"runs on the tier's CPU station, and tier {tname!r} has {len(cpus)}; give it exactly one or drop {field.rsplit('.', 1)[1]}",
        )
        return None
    return cpus[0]


def _contention(c: _Program, term: Contention | None, default_pool: str | None, path: str) -> dict | None:
    """A CPU or delay step's contention term for the engine (its pool as an index)."""
    if term is None:
        return None
    pools = c.m.tiers[c.tname].pools
    pool = term.pool or default_pool
    if pool not in pools:
        c.bad.add(
            f"{path}.pool",
            f"{pool!r} is not a pool of tier {c.tname!r} (pools: {_names(pools)})" if pool else "name the pool whose count the demand grows with",
        )
        return None
    capped = {} if term.max is None else {"max": term.max}
    return {"pool": list(pools).index(pool), "count": term.count, "per": term.per} | capped


def _called_tiers(steps: list) -> list[str]:
    out = []
    for s in steps:
        if isinstance(s, Call):
            out.append(s.call)
        elif (inner := _children(s)) is not None:
            out += _called_tiers(inner)
    return out


def _check_calls(m: Model, ty: str, tname: str, programs: dict, stack: list[str], path: str, bad: _Problems) -> None:
    for callee in _called_tiers(programs.get(tname, [])):
        if callee in stack:
            bad.add(path, f"calls form a cycle ({' → '.join(stack + [callee])}); a request would never finish")
            return
        if callee in programs:
            _check_calls(m, ty, callee, programs, stack + [callee], path, bad)


def _chain(m: Model, chain: ChainData, entry: str, bad: _Problems) -> tuple[dict, list[str]]:
    c = m.workload.chain
    engine_roles: list[dict] = []
    missing: list[str] = []
    for s in chain.states:
        ty = c.types.get(s, s)
        if s == c.back:
            engine_roles.append({"kind": "back"})
        elif s == c.end:
            engine_roles.append({"kind": "end"})
        elif ty in m.requests:
            engine_roles.append({"kind": "request", "type": list(m.requests).index(ty)})
            if entry not in m.requests[ty].programs():
                bad.add(f"requests.{ty}", f"has no program for the entry tier {entry!r}; add requests.{ty}.{entry}")
        elif s == c.start:
            engine_roles.append({"kind": "entry"})
        else:
            missing.append(s)
    roles = ["page" if r["kind"] == "request" else r["kind"] for r in engine_roles]
    if missing:
        bad.add("workload.chain", f"states with no request type: {', '.join(missing)}; add request types with these names or map them in workload.chain.types")
    for s, ty in c.types.items():
        if ty not in m.requests:
            bad.add(f"workload.chain.types.{s}", f"{ty!r} is not a request type")
    start = chain.index(c.start) if c.start in chain.states else 0
    return {"roles": engine_roles, "start": start, "matrix": chain.matrix.tolist()}, roles


def _walk_expected(m: Model, ty: str, tname: str, mult: float, visit) -> None:
    """Call `visit(step, tier, count)` for each step a request of type `ty` runs from
    tier `tname` on, with its expected count per request (loops and calls followed)."""

    def walk(steps, tname, mult):
        for s in steps:
            visit(s, tname, mult)
            if isinstance(s, Loop):
                walk(s.loop.steps, tname, mult * dist.mean(s.loop.count))
            elif (inner := _children(s)) is not None:
                walk(inner, tname, mult)
            elif isinstance(s, Call):
                walk(m.requests[ty].programs()[s.call], s.call, mult)

    walk(m.requests[ty].programs()[tname], tname, mult)


def _per_request(m: Model, mix: dict[str, float], entry: str) -> tuple[dict, float]:
    """Per request of the mix: the expected CPU-seconds at each (tier, station),
    divided by its cores (the station's busy time; concurrency overhead and pools'
    `acquire_cpu` not counted, so the bound stays an upper bound), and the expected
    number of steps."""
    demand: dict = {}
    steps = 0.0

    def visit(s, tname: str, count: float) -> None:
        nonlocal steps
        steps += count
        if isinstance(s, CpuStep):
            station = s.on or next(n for n, st in m.tiers[tname].stations.items() if st.kind == "cpu")
            demand[(tname, station)] = demand.get((tname, station), 0.0) + count * dist.mean(s.cpu)

    for state, frac in mix.items():
        _walk_expected(m, m.workload.chain.types.get(state, state), entry, frac, visit)
    return {(t, st): d / (m.tiers[t].servers * _cores(m.tiers[t].stations[st])) for (t, st), d in demand.items()}, steps


def _cores(station: Cpu | Disk) -> int:
    return station.cores if isinstance(station, Cpu) else station.channels


def _overload(m: Model, busy_per_session: dict) -> list[str]:
    """Warn when an open workload offers more CPU work than the servers can do (a lower
    bound on the load: concurrency overhead and disks are not counted)."""
    w = m.workload
    if isinstance(w.population, Closed):
        return []
    rates = [("workload.population.session_rate", w.population.session_rate, "for the whole run")]
    rates += [(f"workload.phases[{i}].session_rate", p.session_rate, "while it holds") for i, p in enumerate(w.phases) if p.session_rate is not None]
    return [
        f"workload: the open population offers {rate:.3g} sessions/s, which loads "
        f"tiers.{tname}.stations.{station} to {rate * busy:.0%} of its capacity; "
        f"queues will grow {span} (lower {field} or add servers/cores)"
        for field, rate, span in rates
        for (tname, station), busy in sorted(busy_per_session.items())
        if rate * busy >= 1
    ]
