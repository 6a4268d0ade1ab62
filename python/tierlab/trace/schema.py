"""The trace schema (docs/trace.md), one for every producer: the simulator, the load
generator and the live testbed. The summary's shape is written once, in Rust
(`crates/trace/src/summary.rs`); these TypedDicts mirror it for readers and for mypy,
and `check_summary` validates a summary against them (pydantic), naming the first
field that is wrong. A test holds the two sides to the same fields."""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config
from typing_extensions import NotRequired, TypedDict  # pydantic validates these on Python < 3.12

from ..errors import TraceError, field_path

SCHEMA_VERSION = 4
# The per-tier phase columns `<tier>.<phase>` of requests.parquet, in schema order
# (Totok & Karamcheti's w^THR, p, w^DB, q active and idle, and the rest).
PHASES = ["wait_thread", "before_db", "wait_db", "with_db_active", "with_db_idle", "other"]
# A tier's measured demands `<tier>.<demand>` (live: the middleware's, on the pooled tier;
# simulated: every tier's): CPU time, the part of it in taking and giving back
# connections, and wall and CPU time in database statements (simulated: calls to the next
# tier). With `<tier>.db_queries` (statements run), they are the digital twin's inputs.
DEMANDS = ["cpu_time", "pool_cpu_time", "db_time", "db_cpu_time"]
# A finished request's status (requests.parquet), and the outcomes the summary counts:
# those, and `unfinished` (sent after the warm-up, not answered by the end of the run).
Status = Literal["ok", "rejected", "timeout", "error"]
Outcome = Literal[Status, "unfinished"]
STATUSES: list[Status] = ["ok", "rejected", "timeout", "error"]
OUTCOMES: list[Outcome] = [*STATUSES, "unfinished"]
REQUEST_COLUMNS = ["id", "session", "type", "status", "start", "end", "response_time", "retransmissions"]
# The `missing` key of a trace whose `retransmissions` column is 0 because nothing
# measured it (another tool's results, telemetry): analyses say "not measured", not 0.
RETRANSMISSIONS_UNMEASURED = "requests.retransmissions"
STATEMENT_COLUMNS = ["query", "calls", "total_time", "rows"]
TIMESERIES_COLUMNS = ["t", "tier", "server", "resource", "metric", "value"]

# Unknown keys are errors: a misspelt field must not pass for a missing optional one.
_STRICT = ConfigDict(extra="forbid")


@with_config(_STRICT)
class StatusCounts(TypedDict):
    """Every request sent after the warm-up is in exactly one count (`sent`)."""

    ok: int
    rejected: int
    timeout: int
    error: int
    unfinished: int


# A functional TypedDict: "p99.9" is not an identifier.
Percentiles = TypedDict(
    "Percentiles",
    {"mean": float, "p50": float, "p90": float, "p95": float, "p98": float, "p99": float, "p99.9": float, "max": float},
)
Percentiles.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]


@with_config(_STRICT)
class TypeSummary(TypedDict):
    requests: StatusCounts
    throughput: float
    response_time: Percentiles | None


PoolKind = Literal["threads", "connections", "other"]


@with_config(_STRICT)
class PoolSummary(TypedDict):
    kind: PoolKind
    size: int
    mean_busy: float
    busy_max: float
    mean_queued: float
    acquired: int
    waited: int
    timed_out: int
    rejected: int
    dropped: int
    pinned: float
    mean_handing_off: NotRequired[float]  # absent from traces written before it (2026-11-26)


@with_config(_STRICT)
class StationSummary(TypedDict):
    kind: Literal["cpu", "disk"]
    utilization: float


@with_config(_STRICT)
class GcSummary(TypedDict):
    pauses: int
    pause_time: float


@with_config(_STRICT)
class ServerSummary(TypedDict):
    visits: int | None
    throughput: float | None
    mean_residence: float | None
    gc: GcSummary | None
    stations: dict[str, StationSummary]
    pools: dict[str, PoolSummary]


@with_config(_STRICT)
class DispatchSummary(TypedDict):
    dispatchers: int
    session_migrations: int
    sessions_created: int
    queued: int
    rejected_queue_full: int
    rejected_queue_timeout: int
    sync_messages: int
    sync_payload_bytes: float


@with_config(_STRICT)
class TierSummary(TypedDict):
    position: int
    servers: list[ServerSummary]
    dispatch: DispatchSummary | None


@with_config(_STRICT)
class LinkSummary(TypedDict):
    utilization: float


@with_config(_STRICT)
class SessionSummary(TypedDict):
    started: int
    completed: int
    throughput: float
    mean_requests: float


@with_config(_STRICT)
class Little(TypedDict):
    mean_in_system: float
    arrival_rate: float
    mean_time_in_system: float


@with_config(_STRICT)
class Errors(TypedDict):
    connect: int
    protocol: int
    timeout: int
    http_503: int
    http_4xx: int
    http_5xx: int


@with_config(_STRICT)
class ControlDecision(TypedDict):
    """One decision of an online controller: when, the pool sizes in force after it (by
    pool kind), whether it changed any, and why."""

    t: float
    sizes: dict[str, int]
    changed: bool
    reason: str


@with_config(_STRICT)
class ControlSummary(TypedDict):
    strategy: str
    tier: str
    interval: float
    decisions: list[ControlDecision]


@with_config(_STRICT)
class Summary(TypedDict):
    model: str
    source: Literal["simulation", "live", "import"]
    schema_version: int
    window: float
    seed: int
    duration: float
    warmup: float
    measured_seconds: float
    interrupted: bool
    missing: dict[str, str]
    requests: StatusCounts
    throughput: float
    response_time: Percentiles | None
    types: dict[str, TypeSummary]
    tiers: dict[str, TierSummary]
    links: dict[str, LinkSummary]
    sessions: SessionSummary
    little: Little
    # the simulator's (null in a live trace)
    simulated_until: float | None
    events: int | None
    # the load generator's (null in a simulated trace)
    elapsed: float | None
    target: str | None
    errors: Errors | None
    bytes_received: int | None
    reconnects: int | None
    # an online controller's decisions (docs/control.md): absent, not null, without one
    control: NotRequired[ControlSummary]


_SUMMARY = TypeAdapter(Summary)


def figures(p: Percentiles | None) -> dict[str, float]:
    """A response-time summary as a plain dict; empty when nothing completed."""
    return cast(dict[str, float], dict(p)) if p is not None else {}


def sent(counts: StatusCounts) -> int:
    """Requests sent after the warm-up: ok + rejected + timeout + error + unfinished."""
    return counts["ok"] + counts["rejected"] + counts["timeout"] + counts["error"] + counts["unfinished"]


# Schema 3 counted the requests running at the end once, beside the outcomes
# (`in_flight_at_end`), over all types, and the simulator's count included requests
# sent during the warm-up.
_V3_UNFINISHED = "types.*.requests.unfinished"
_V3_WHY = "a schema-3 trace counts the requests unfinished at its end over all types only (requests.unfinished, then in_flight_at_end)"


def _from_v3(data: Any) -> None:
    """A schema-3 summary in this schema's terms, in place: its `in_flight_at_end` is
    `requests.unfinished`; each type's is unknown (0, and `missing` says so)."""
    if not (isinstance(data, dict) and data.get("schema_version") == 3 and isinstance(data.get("requests"), dict)):
        return
    data["requests"]["unfinished"] = data.pop("in_flight_at_end", 0)
    for t in data.get("types", {}).values() if isinstance(data.get("types"), dict) else ():
        if isinstance(t, dict) and isinstance(t.get("requests"), dict):
            t["requests"].setdefault("unfinished", 0)
    if isinstance(data.get("missing"), dict) and data["requests"]["unfinished"]:
        data["missing"].setdefault(_V3_UNFINISHED, _V3_WHY)
    data["schema_version"] = SCHEMA_VERSION


def check_summary(data: Any, where: str = "summary.json", strict: bool = False) -> Summary:
    """`data` if it is a summary of this schema; else a TraceError naming the first
    wrong field as a path (`tiers.app.servers[0].pools.db.size`). NaN, infinite and
    negative figures are wrong too: every figure of a summary is a measurement. A
    schema-3 summary is read in this schema's terms (changed in place)."""
    _from_v3(data)
    try:
        # `strict` for a summary read from a file: a figure written as a text ("12.5")
        # passed the lax check and failed later as a TypeError.
        _SUMMARY.validate_python(data, strict=strict)
    except ValidationError as e:
        first = e.errors()[0]
        path = field_path(first["loc"])
        raise TraceError(f"{where}: {path or '<top>'}: {first['msg']} (trace schema v{SCHEMA_VERSION}, see docs/trace.md)") from None
    bad = _first_bad_figure(data)
    if bad is not None:
        raise TraceError(f"{where}: {bad}: not a non-negative finite number (trace schema v{SCHEMA_VERSION}, see docs/trace.md)")
    return data


def _first_bad_figure(node: Any, path: str = "") -> str | None:
    """The path of the first NaN, infinite or negative number: every figure of a
    summary is a count, a time, a rate or a share."""
    if isinstance(node, (int, float)) and not isinstance(node, bool):
        return path if not (0 <= node < float("inf")) else None
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        found = _first_bad_figure(v, f"{path}[{k}]" if isinstance(k, int) else (f"{path}.{k}" if path else k))
        if found is not None:
            return found
    return None
