"""The model file, as pydantic models: the single source of truth for what a YAML
model may say (``tierlab schema`` exports it as JSON Schema for editors)."""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StrictBool, Tag, model_validator

from .dist import Dist
from .types import I32, NUMBER, U32, U64, Finite, NonNeg, Pos, PosSeconds, PosU32, Seconds, Servers

Name = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_\-]*$")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---- resources ----------------------------------------------------------------------


class Retransmit(Strict):
    """TCP SYN retransmission: a dropped attempt is retried after `initial` seconds,
    then 2×, 4× … that; after `attempts` retries the request is rejected."""

    initial: PosSeconds = Field(3.0, description="seconds (3 s classic, 1 s on modern stacks)")
    attempts: Annotated[int, Field(ge=1, le=64, description="retries; beyond 64 doublings the wait outlasts any run"), NUMBER] = 5


class Contention(Strict):
    """Chen & Gorton's contention cost on one CPU step: its demand × (1 + per · n), n
    counted in a pool of the tier when the step starts — e.g. a connection pool's
    bookkeeping growing with the threads queued for it, or an embedded database's work
    per statement growing with the connections in use at once. With `max`, n counts up
    to it: the growth levels off (as a Python server's does past a few threads held).
    On a delay step the wait grows the same way (a statement's round trip on a machine
    the database shares, with the statements in service)."""

    pool: Name | None = Field(None, description="the pool counted (a pool's `acquire_contention`: that pool by default)")
    count: Literal["busy", "waiting"] = Field(description="busy: tokens held by other requests; waiting: requests queued for a token")
    per: NonNeg = Field(description="the demand's growth per token or waiter counted (0.1 = +10% each)")
    max: PosU32 | None = Field(None, description="the count stops adding beyond this; null = it never does")


class Pool(Strict):
    """A soft, token-based resource (threads, DB connections, sockets, accept backlog)."""

    kind: Literal["threads", "connections", "other"] = Field("other", description="threads/connections decide which request phase holding or waiting counts as")
    size: Annotated[int, Field(ge=1, le=1_000_000), NUMBER]
    timeout: Seconds | None = Field(None, description="seconds a request waits for a token before it is rejected; 0 = reject at once; null = wait forever")
    max_queue: U32 | None = Field(None, description="waiters beyond this are rejected at once (or dropped, with `retransmit`): an accept backlog")
    retransmit: Retransmit | None = Field(None, description="when full: drop the attempt and let the client retransmit")
    queue: Literal["fifo", "priority"] = Field("fifo", description="priority: lower request-type priority is served first")
    hold: Literal["request", "session"] = Field(
        "request",
        description="who holds a token: request = a request's steps take and give it back (or its visit's end does); "
        "session = a session takes it before its first request enters the tier and keeps it to the session's end, "
        "through its think times: a client's keep-alive connection, of which the server holds at most `size` "
        "(Tomcat's maxConnections, waitress's connection_limit); a session without one waits in the queue (the "
        "kernel's accept queue), its wait in its request's response time. On the entry tier, of one server, kind other; no step names it",
    )
    caching: Literal["transaction", "request"] = Field(
        "transaction",
        description="for `use` blocks: transaction = a token is taken and given back around each use (kept only "
        "inside a `transaction` block); request = taken at the first use and kept to the end of the request",
    )
    acquire_cpu: Dist | None = Field(
        None,
        description="CPU seconds the tier spends per acquisition from the pool (e.g. getConnection() and close() "
        "on a JDBC pool), counted as waiting for the pool; a token the request has cached costs nothing",
    )
    acquire_contention: Contention | None = Field(
        None, description="`acquire_cpu` grows with a count of this pool (or of `pool`), e.g. the waiters: the pool's bookkeeping per acquisition"
    )
    handoff: Dist | None = Field(
        None,
        description="seconds a given-back token takes to reach the waiter it goes to (a woken thread must run "
        "before it takes it: on a Python server, through the interpreter lock); the token is free meanwhile, "
        "and promised: nobody else takes it. null = at once",
    )
    handoff_cpu: Dist | None = Field(
        None,
        description="the hand-off as the woken waiter's own run: CPU seconds on the tier's CPU station, taken "
        "before it takes the token (free and promised meanwhile), so that under processor sharing it lasts "
        "longer the more jobs compete for that CPU (a Python server's interpreter lock); instead of handoff",
    )

    @model_validator(mode="after")
    def _one_hand_off(self):
        if self.handoff is not None and self.handoff_cpu is not None:
            raise ValueError("give handoff (a delay) or handoff_cpu (a CPU demand), not both")
        return self


class Cpu(Strict):
    """Processor sharing over `cores`. With n jobs each runs at speed · min(1, cores/n) /
    (1 + c1·(n−1) + c2·(n−1)² + …): `overhead` gives c1 (a number) or [c1, c2, …]."""

    kind: Literal["cpu"]
    cores: PosU32 = 1
    speed: Pos = Field(1.0, description="each core's speed relative to the one the CPU demands were measured on: a demand of d seconds takes d/speed alone")
    overhead: NonNeg | list[NonNeg] = 0.0

    def coefficients(self) -> list[float]:
        return [self.overhead] if isinstance(self.overhead, (int, float)) else list(self.overhead)


# Andreolini et al.'s memory scenarios: the share of the database in the buffer pool.
MEMORY_PRESETS = {"all_in_memory": 1.0, "partially_in_memory": 0.6, "mostly_on_disk": 0.3}


class Locality(Strict):
    """Skewed access: a `hot_data` share of the data receives `hot_accesses` of the
    accesses (the 80/20 rule: 0.2 and 0.8), each part uniform within itself."""

    hot_data: Annotated[Finite, Field(gt=0, lt=1), NUMBER]
    hot_accesses: Annotated[Finite, Field(gt=0, lt=1), NUMBER]

    def hits(self, cached: float) -> float:
        """Hit ratio of a buffer pool holding the `cached` share of the data, hottest first."""
        h, a = self.hot_data, self.hot_accesses
        return a * cached / h if cached <= h else a + (1 - a) * (cached - h) / (1 - h)


class Disk(Strict):
    """FCFS storage: an access hits the cache with probability `hit_ratio`, otherwise it
    queues for an exponential (or constant) service of 1/iops seconds. `memory` gives
    the hit ratio instead, as the share of the database the buffer pool holds (a
    preset name or a fraction); with `locality` the pool holds the hottest data first,
    otherwise accesses are taken as uniform over the data."""

    kind: Literal["disk"]
    iops: Pos
    hit_ratio: Annotated[Finite, Field(ge=0, le=1), NUMBER] | None = None
    memory: Literal["all_in_memory", "partially_in_memory", "mostly_on_disk"] | Annotated[Finite, Field(ge=0, le=1), NUMBER] | None = None
    locality: Locality | None = None
    channels: PosU32 = 1
    service: Literal["exponential", "constant"] = "exponential"

    @model_validator(mode="after")
    def _one_source_of_hits(self):
        if self.hit_ratio is not None and self.memory is not None:
            raise ValueError("give hit_ratio or memory, not both")
        if self.locality is not None and self.memory is None:
            raise ValueError("locality needs memory (the buffer pool's share of the data)")
        return self

    def hits(self) -> float:
        if self.memory is None:
            return self.hit_ratio or 0.0
        cached = MEMORY_PRESETS[self.memory] if isinstance(self.memory, str) else self.memory
        return self.locality.hits(cached) if self.locality else cached


Station = Annotated[Cpu | Disk, Field(discriminator="kind")]


# ---- dispatch -------------------------------------------------------------------------


class Sync(Strict):
    """How dispatchers sharing one cluster exchange load metrics."""

    interval: PosSeconds = Field(0.05, description="seconds between exchanges")
    delay: Seconds = Field(0.0, description="seconds a message takes to arrive (staleness)")


class DispatchBase(Strict):
    dispatchers: Servers = Field(1, description="K dispatchers (web servers); the caller's server i uses dispatcher i mod K")
    topology: Literal["hierarchical", "shared"] = Field("shared", description="hierarchical: dispatcher i owns the i-th block of servers; shared: all use all")
    sync: Sync = Sync()


class RoundRobinDispatch(DispatchBase):
    """Per request, weighted round robin; no affinity."""

    policy: Literal["round_robin"] = "round_robin"
    weights: list[Annotated[int, Field(ge=0, le=1_000_000), NUMBER]] | None = Field(None, description="relative weights, one per server")


class PlainDispatch(DispatchBase):
    """affinity: round robin for new sessions, then the session's server; random;
    least_active: fewest requests in progress, no affinity (the ReDAL paper's HJ);
    power_of_two: the less busy of two random servers (Envoy's least request)."""

    policy: Literal["affinity", "random", "least_active", "power_of_two"]


class CapDispatch(DispatchBase):
    """Affinity below a cap of active requests per server (HAProxy
    `hash-preserve-affinity maxconn`); above it, the least active server."""

    policy: Literal["affinity_cap"]
    cap: PosU32


class WaitQueue(Strict):
    size: Annotated[int, Field(ge=1, le=100_000_000), NUMBER] = 1000
    timeout: PosSeconds = 10.0


class RedalDispatch(DispatchBase):
    """ReDAL (Dutta et al.): affinity while the affined server is dispatchable, else
    the least modified load m = l + α·e0 among dispatchable servers, else the least
    loaded (redal) or wait at the dispatcher until one is dispatchable (redal_w).
    redal_n is redal with the dispatchability slope taken against the requests in
    progress instead of the arrivals (crates/policy/src/redal.rs, ReDAL-N)."""

    policy: Literal["redal", "redal_w", "redal_n"]
    alpha: Annotated[Finite, Field(gt=0, le=1, description="expected-load factor α ∈ (0, 1]"), NUMBER] = 0.9
    slice: Annotated[PosSeconds, Field(description="time-slice length d, seconds")] = 1.0
    think_time: Annotated[PosSeconds, Field(description="think time h assumed until measured, seconds")] = 10.0
    window: Annotated[int, Field(ge=1, le=1_000_000, description="g: inter-request times averaged into h"), NUMBER] = 100
    intervals: Annotated[int, Field(ge=2, le=1_000_000, description="m: intervals in the throughput-slope window"), NUMBER] = 5
    interval: Annotated[PosSeconds, Field(description="throughput-measurement interval, seconds")] = 1.0
    threshold: Annotated[Finite, Field(gt=0), NUMBER] | None = Field(
        None, description="T: requests per second a server is kept under; past it (m = l + α·e0 ≥ T·slice) it takes no request (none: no bound)"
    )
    queue: WaitQueue = Field(WaitQueue(), description="redal_w: requests held per dispatcher, and their wait limit")

    @model_validator(mode="after")
    def _slice_below_think_time(self):
        if self.slice >= self.think_time:
            raise ValueError(
                f"slice d = {self.slice} must be less than think_time h = {self.think_time} "
                "(reservations are ⌈h/d⌉ slices ahead); lower slice or raise think_time"
            )
        return self


def _policy(v: Any) -> str:
    p = str(v.get("policy", "round_robin") if isinstance(v, dict) else getattr(v, "policy", None))
    return {"redal_w": "redal", "redal_n": "redal", "affinity": "plain", "random": "plain", "least_active": "plain", "power_of_two": "plain"}.get(p, p)


Dispatch = Annotated[
    Annotated[RoundRobinDispatch, Tag("round_robin")]
    | Annotated[PlainDispatch, Tag("plain")]
    | Annotated[CapDispatch, Tag("affinity_cap")]
    | Annotated[RedalDispatch, Tag("redal")],
    Discriminator(
        _policy,
        custom_error_type="policy",
        custom_error_message="policy is one of: round_robin, affinity, random, least_active, power_of_two, affinity_cap, redal, redal_w, redal_n",
    ),
]


class SessionState(Strict):
    """Sessions keep state in this tier's servers' memory; a request served by another
    server first fetches it from an external store (the old copy is invalidated)."""

    fetch: list[Step] = Field([], description="steps that fetch the state; run right after the visit's first thread")


class Gc(Strict):
    """Stop-the-world garbage collection (a JVM-like tier): CPU work allocates memory,
    and each time `heap` MB have been allocated every CPU of the server stops for
    `pause` + `per_request` × c + `per_request_squared` × c², c the requests in
    progress (live data grows with concurrency; a crowded, saturating server leaves the
    collector less CPU: Wang et al. §4.1.2). Pauses come more often as the load
    (allocation rate) grows."""

    heap: Annotated[Pos, Field(description="MB allocated between collections (young generation)")]
    allocation: Annotated[NonNeg, Field(description="MB allocated per CPU-second of work")]
    pause: Annotated[Seconds, Field(description="seconds of every pause")] = 0.05
    per_request: Annotated[Seconds, Field(description="extra seconds per request in progress")] = 0.0
    per_request_squared: Annotated[Seconds, Field(description="extra seconds per (request in progress)²")] = 0.0


class InterpreterLock(Strict):
    """CPython's interpreter lock over each CPU station of the tier's servers (a process
    has one lock: give such a tier one CPU station): one CPU step computes at a time (on one core at the station's speed; `overhead` does not apply).
    A step alone keeps the lock to its end; once another waits, the holder keeps it
    `switch_interval` seconds more (`sys.setswitchinterval`), then queues behind the
    waiters; each change of holder among waiting steps costs `handoff` seconds in which
    none computes (the woken thread's wake-up)."""

    switch_interval: Annotated[Pos, Field(description="seconds a holder keeps the lock while others wait (CPython's default 0.005)")] = 0.005
    handoff: Annotated[Seconds, Field(description="seconds per change of holder among waiting steps")] = 0.0


class Tier(Strict):
    servers: Servers = 1
    dispatch: Dispatch = Field(RoundRobinDispatch(), description="how requests reach this tier's servers")
    session_state: SessionState | None = None
    gc: Gc | None = None
    interpreter_lock: InterpreterLock | None = None
    pools: dict[Name, Pool] = {}
    stations: dict[Name, Station] = {}


# Andreolini et al.'s network scenarios for the client links (netem: bandwidth, normal
# one-way delay, loss), with the TCP of their Linux 2.6: slow start from 3 segments
# (RFC 3390), and a retransmission timeout of RTT + 200 ms (Linux's minimum variance term).
LINK_PRESETS = {
    "well_connected": {"bandwidth": 64e6, "delay": {"normal": {"mean": 0.005, "sd": 0.001}}, "loss": 0.0, "initial_window": 3, "rto": 0.21},
    "badly_connected": {"bandwidth": 8e6, "delay": {"normal": {"mean": 0.2, "sd": 0.01}}, "loss": 0.01, "initial_window": 3, "rto": 0.6},
}


class Link(Strict):
    """A network link: each transfer takes bytes/bandwidth plus the one-way delay d,
    2d more per further flight of TCP slow start (with `initial_window`), and one
    retransmission timeout per lost segment. `preset` fills in the fields not given."""

    bandwidth: Annotated[Pos, Field(description="bits per second")]
    delay: Dist = 0.0
    shared: StrictBool = Field(False, description="true: concurrent transfers share the bandwidth; false: one link per client")
    loss: Annotated[Finite, Field(ge=0, lt=1, description="probability that a segment is lost"), NUMBER] = 0.0
    mss: Annotated[Pos, Field(description="segment size, bytes")] = 1460.0
    rto: Annotated[Seconds, Field(description="seconds a lost segment costs (retransmission timeout)")] = 0.2
    initial_window: Annotated[Finite, Field(ge=1, le=2**32), NUMBER] | None = Field(
        None,
        description="slow start: segments in the first flight, doubling every round trip (RFC 3390: 3, "
        "RFC 6928: 10); null = the transfer is one flight (a warm connection)",
    )

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, v: Any):
        if isinstance(v, dict) and "preset" in v:
            v = dict(v)
            name = v.pop("preset")
            if not isinstance(name, str) or name not in LINK_PRESETS:
                raise ValueError(f"preset {name!r} does not exist; presets: {', '.join(LINK_PRESETS)}")
            v = {**LINK_PRESETS[name], **v}
        return v


# ---- step programs --------------------------------------------------------------------


class Acquire(Strict):
    acquire: Name
    exclusive: StrictBool = Field(
        False,
        description="take every token of the pool, after the holders before it: a pool of size S is then a readers–writer lock for S readers "
        "(e.g. a MyISAM table lock: reads take one token, writes all)",
    )


class Release(Strict):
    release: Name


class CpuStep(Strict):
    cpu: Dist = Field(description="seconds of work if run alone")
    on: Name | None = Field(None, description="the CPU station, if the tier has several")
    contention: Contention | None = Field(None, description="the demand grows with a pool's count (Chen & Gorton); null = a fixed demand")


class DiskStep(Strict):
    disk: Dist = Field(description="number of accesses")
    on: Name | None = None


class Call(Strict):
    call: Name = Field(description="run this request type's program on that tier (synchronously)")


class LoopBody(Strict):
    count: Dist
    steps: list[Step]


class Loop(Strict):
    loop: LoopBody


class Delay(Strict):
    delay: Dist = Field(description="seconds the request waits, holding what it holds")
    contention: Contention | None = Field(
        None, description="the wait grows with a pool's count, as a CPU step's demand does (e.g. a statement's round trip with the statements in service)"
    )


class UseBody(Strict):
    pool: Name
    steps: list[Step]


class Use(Strict):
    """One logical use of a pooled resource (getConnection() … close()): the pool's
    `caching` mode decides whether the token is given back after it."""

    use: UseBody


class Transaction(Strict):
    """The `use` blocks inside share one token, kept until the transaction ends."""

    transaction: UseBody


class TransferBody(Strict):
    link: Name
    bytes: Dist


class Transfer(Strict):
    transfer: TransferBody


_OPS = ("acquire", "release", "cpu", "disk", "call", "loop", "delay", "transfer", "use", "transaction")


def _op(v: Any) -> str | None:
    if isinstance(v, dict):
        keys = [k for k in v if k in _OPS]
        return keys[0] if len(keys) == 1 else None
    if isinstance(v, BaseModel):
        return _tag_of(type(v))
    return None


@functools.cache
def _tag_of(step: type[BaseModel]) -> str | None:
    # Once per class: `_op` runs for every step at every dump of a model (a sweep's
    # parent dumps one per run), and hasattr on an instance raises inside pydantic.
    return next((k for k in _OPS if k in step.model_fields), None)


Step = Annotated[
    Annotated[Acquire, Tag("acquire")]
    | Annotated[Release, Tag("release")]
    | Annotated[CpuStep, Tag("cpu")]
    | Annotated[DiskStep, Tag("disk")]
    | Annotated[Call, Tag("call")]
    | Annotated[Loop, Tag("loop")]
    | Annotated[Delay, Tag("delay")]
    | Annotated[Transfer, Tag("transfer")]
    | Annotated[Use, Tag("use")]
    | Annotated[Transaction, Tag("transaction")],
    Discriminator(
        _op,
        custom_error_type="step",
        custom_error_message="a step is a mapping with exactly one of: " + ", ".join(_OPS),
    ),
]
LoopBody.model_rebuild()
UseBody.model_rebuild()
SessionState.model_rebuild()
Tier.model_rebuild()


class RequestType(BaseModel):
    """One step program per tier the type visits (key = tier name); the entry tier's
    program runs first."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, list[Step]] = Field(init=False)
    priority: I32 = Field(0, description="lower = served first by priority pools (cross-tier priority)")

    def programs(self) -> dict[str, list]:
        return dict(self.__pydantic_extra__ or {})


# ---- workload --------------------------------------------------------------------------


# A reweighting of the chain: state → factor on every transition into it.
Reweight = dict[str, Annotated[Finite, Field(gt=0, le=1e6), NUMBER]]


class Chain(Strict):
    """A Markov chain of pages: a CSV (row = from, column = to, first column the row
    names) or an inline nested mapping {from: {to: probability}}."""

    csv: str | None = Field(None, description="path, relative to the model file")
    matrix: dict[str, dict[str, NonNeg]] | None = None
    start: str = Field(description="the first state; if no request type is mapped to it, it issues no request (TPC-W's INIT)")
    back: str = Field("BACK", description="the state that re-issues the previous page")
    end: str = Field("END_OF_SESSION", description="the state that ends the session")
    types: dict[str, str] = Field({}, description="state → request type, where they differ")
    normalize: StrictBool = Field(False, description="rescale rows that do not sum to 1 instead of rejecting them")
    reweight: Reweight = Field(
        {},
        description="state → factor: multiply every transition into the state by it, then rescale the rows "
        "(shifts the request mix, e.g. {SRES: 1.5} for more searches)",
    )


class Closed(Strict):
    clients: PosU32 = Field(description="emulated browsers, each running sessions back to back")


class Open(Strict):
    session_rate: Pos = Field(description="Poisson session arrivals per second")


class AfterRequests(Strict):
    after_requests: Dist


class AfterTimeBody(Strict):
    duration: Dist
    at: str | None = Field(None, description="end at the next transition into this state (TPC-W: HOME)")


class AfterTime(Strict):
    after_time: AfterTimeBody


class Burstiness(Strict):
    """Bursty arrivals: a two-state MMPP fitted to the base rate and the index of
    dispersion I (tierlab.burst). Open populations: the session arrival rate (and the
    sessions' think times run at the phase's clock rate too); closed: the clients'
    think-time rate (base N / mean think, as if responses were quick)."""

    dispersion: Annotated[Finite, Field(ge=1, le=1e6, description="index of dispersion I of the arrival counts; 1 = Poisson"), NUMBER]
    burst_share: Annotated[Finite, Field(gt=0, lt=1), NUMBER] = Field(0.1, description="share of the time in the burst phase")
    ratio: Annotated[Finite, Field(gt=1, le=1e6), NUMBER] = Field(10.0, description="burst-phase rate / calm-phase rate")


def _population(v: Any) -> str | None:
    keys = set(v) if isinstance(v, dict) else {f for f in ("clients", "session_rate") if hasattr(v, f)}
    return "closed" if "clients" in keys else "open" if "session_rate" in keys else None


Population = Annotated[
    Annotated[Closed, Tag("closed")] | Annotated[Open, Tag("open")],
    Discriminator(_population, custom_error_type="population", custom_error_message="give clients (a closed population) or session_rate (an open one)"),
]


class Phase(Strict):
    """From `at` on, the workload changes (a load step, a mix shift, a slow tier): each
    field given replaces the value in force until a later phase changes it again
    (docs/phases.md)."""

    at: Seconds = Field(description="seconds of simulated time from the run's start (warm-up included: the trace's time axis)")
    session_rate: Pos | None = Field(None, description="an open population's Poisson session arrivals per second from then on")
    reweight: Reweight | None = Field(
        None,
        description="the chain's reweighting from then on, in place of workload.chain.reweight (the same meaning: "
        "state → factor on every transition into it, rows rescaled); {} = the chain as read",
    )
    delay: dict[Name, Seconds] = Field(
        {},
        description="tier → seconds added to every visit to it from then on (each call into it: on a database tier, "
        "each statement), before its program runs; 0 ends it",
    )

    @model_validator(mode="after")
    def _changes_something(self):
        if self.session_rate is None and self.reweight is None and not self.delay:
            raise ValueError("a phase changes nothing; give session_rate, reweight or delay")
        return self


class Workload(Strict):
    entry: Name | None = Field(None, description="the tier requests arrive at; default the first tier")
    population: Population
    chain: Chain
    think: Dist = Field(0.0, description="seconds between a response and the next request")
    burstiness: Burstiness | None = None
    session_weight: Dist = Field(1.0, description="drawn per session: multiplies the CPU work of its requests (heavy and light users)")
    session_end: Literal["chain"] | AfterRequests | AfterTime = "chain"
    phases: list[Phase] = Field([], description="changes of the workload over the run, in time order (docs/phases.md); none: the workload is stationary")


class Run(Strict):
    duration: PosSeconds = 600.0
    warmup: Seconds = 0.0
    seed: U64 = 1
    window: Annotated[PosSeconds, Field(description="monitoring window, seconds; at most the duration")] = 0.1
    records: StrictBool = Field(True, description="keep one record per request (memory grows with the run)")


# ---- online control ----------------------------------------------------------------


class Gradient(Strict):
    """Gradient2's parameters (Netflix concurrency-limits), its windows in intervals."""

    smoothing: Annotated[float, Field(gt=0, le=1, description="share of the new estimate taken each interval"), NUMBER] = 0.2
    queue: Annotated[NonNeg, Field(description="threads the limit may grow by per step while the latency holds")] = 4.0
    tolerance: Annotated[float, Field(ge=1, le=1e6, description="latency rise tolerated before the limit shrinks (1.5: +50%)"), NUMBER] = 1.5
    long_window: Annotated[int, Field(ge=1, le=1_000_000, description="intervals the long-term latency average spans"), NUMBER] = 120
    warmup: Annotated[int, Field(ge=0, le=1_000_000, description="intervals averaged plainly before the long-term average starts"), NUMBER] = 10


class Twin(Strict):
    """The twin strategy's parameters (docs/control.md): a model of the tier re-calibrated
    every interval from the pools' hold times, searched at the observed load and mix."""

    model: str | None = Field(None, description="the twin, a model file (e.g. from `tierlab twin calibrate`), relative to this one; null = this model itself")
    slo_p99: PosSeconds = Field(1.0, description="seconds the response time's 99th percentile must stay under")
    hysteresis: NonNeg = Field(0.05, description="the least predicted gain over the sizes in force that moves them (0.05: 5%)")
    grid: Annotated[int, Field(ge=2, le=64, description="sizes per pool on the search's coarse grid (geometric between the bounds)"), NUMBER] = 4
    # 10 s: the horizon the control study (studies/control.py) and the tests score.
    horizon: PosSeconds = Field(10.0, description="seconds of the observed load the twin simulates per candidate (after a quarter as much warm-up)")
    smoothing: Annotated[float, Field(gt=0, le=1, description="the share of each interval's measured ÷ predicted hold time taken"), NUMBER] = 0.5


Dwell = Annotated[int, Field(ge=0, le=1_000_000, description="intervals a change stands before the next may be made (a minimum dwell); 0: none"), NUMBER]


class Revert(Strict):
    """The revert guard (docs/control.md): a change after which the error share rises by
    more than `margin` is undone and its sizes before held `hold` intervals."""

    margin: Annotated[float, Field(ge=0, le=1, description="the rise of the error share after a change that reverts it (0.01: one point)"), NUMBER] = 0.01
    hold: Annotated[int, Field(ge=0, le=1_000_000, description="intervals a reverted change's sizes are held before the strategy may move again"), NUMBER] = 6


class Control(Strict):
    """An online controller re-sizing one tier's pools every interval (docs/control.md)."""

    strategy: Literal["static", "gradient", "twin"] = Field(
        description="static: nothing changes (the baseline); gradient: Gradient2 on the thread pool; twin: the best sizes the re-calibrated twin predicts"
    )
    tier: Name | None = Field(None, description="the tier whose pools are re-sized (default: the first with a threads pool)")
    interval: Annotated[PosSeconds, Field(description="seconds between decisions: a whole number of run.window")] = 5.0
    bounds: dict[Literal["threads", "connections"], tuple[PosU32, PosU32]] = Field(
        description="each re-sized pool's [least, greatest] size, by kind, e.g. {threads: [2, 64]}; pools without are left alone"
    )
    gradient: Gradient = Field(Gradient(), description="the gradient strategy's parameters")
    twin: Twin = Field(Twin(), description="the twin strategy's parameters")
    max_step: PosU32 | None = Field(None, description="the most one decision may move a pool's size (a rate limit on changes); none: no limit")
    revert: Revert = Field(Revert(), description="when a change after which the errors rise is reverted, and for how long")
    dwell: Dwell = 0

    def engine_strategy(self) -> dict:
        """The strategy as crates/control's `Strategy` reads it: its name and parameters
        (the twin's file is Python's to load, not the controller's)."""
        params = {"gradient": self.gradient.model_dump(), "twin": self.twin.model_dump(exclude={"model"})}
        return {"strategy": self.strategy} | params.get(self.strategy, {})


class Model(Strict):
    name: str = "model"
    description: str = ""
    run: Run = Run()
    tiers: dict[Name, Tier] = Field(min_length=1)
    links: dict[Name, Link] = {}
    requests: dict[str, RequestType] = Field(min_length=1)
    workload: Workload
    control: Control | None = Field(None, description="an online controller of a tier's pool sizes; none: the sizes stay")
