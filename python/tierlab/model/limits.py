"""The limits of a run as a whole, stated once (docs/model-limits.md): a run that cannot
fit in memory or would need unreasonably many events is refused before it starts, with
the estimate and the field to change. Each field's own range is in `types` and `spec`.

The estimates are upper bounds from the model alone: the request rate is what the
population offers (an open one's session rate × requests per session; a closed one's
clients / mean think time), capped by the busiest CPU's capacity."""

from __future__ import annotations

import math

from . import dist
from .spec import Closed, Model

MEMORY_BYTES = 8 * 2**30
"""What one run may hold: its time series, request records, sessions and servers."""
MAX_EVENTS = 1e10
"""Events one run may take: about half an hour at the engine's several million a second."""

# Bytes each item costs, engine and Python copies together.
SERIES_VALUE = 40  # the engine's f64, and the long-format row (t, tier, server, resource, metric, value)
RECORD = 120  # id, session, type, status, start, end, retransmissions, response time — twice
RECORD_PER_TIER = 140  # server, visits, time, six phases, db requests — twice
SESSION = 256
SERVER_RESOURCE = 512  # a station or pool of one server, with its statistics
# Events per request beyond one per step: arrival, dispatch, completion, think.
EVENTS_PER_REQUEST = 4
SERVER_SERIES = 4  # concurrency, arrivals, completions, response time (crates/sim observer.rs)
POOL_SERIES = 5  # busy, busy_max, queued, rejected, dropped


def run_size_problems(m: Model, busy: dict, steps: float, per_session: float) -> list[tuple[str, str]]:
    """(field, why) if the run would exceed MEMORY_BYTES or MAX_EVENTS. `busy`: CPU busy
    seconds per request at each (tier, station); `steps`: expected steps per request;
    `per_session`: expected requests per session (inf if sessions never end)."""
    r, w = m.run, m.workload
    rate = _request_rate(m, busy, per_session)
    requests = rate * r.duration  # inf when nothing bounds the rate
    windows = math.ceil(r.duration / r.window)
    series = sum(t.servers * (SERVER_SERIES + len(t.stations) + POOL_SERIES * len(t.pools)) for t in m.tiers.values()) + len(m.links)
    resources = sum(t.servers * (1 + len(t.stations) + len(t.pools)) for t in m.tiers.values())
    if isinstance(w.population, Closed):
        sessions, sessions_field = float(w.population.clients), "workload.population.clients"
    else:  # arrivals × how long a session lasts (its think times; the whole run if the chain never ends)
        length = r.duration if per_session == math.inf else min(r.duration, per_session * dist.mean(w.think))
        sessions, sessions_field = w.population.session_rate * length, "workload.population.session_rate"
    parts = {
        "run.window": (
            windows * (series + 1) * SERIES_VALUE,
            f"{r.window:g} s over {r.duration:g} s gives {windows:.2g} windows × {series} series",
            "raise run.window, lower run.duration or use fewer servers",
        ),
        "run.records": (
            requests * (RECORD + RECORD_PER_TIER * len(m.tiers)) if r.records and requests < math.inf else 0.0,
            f"≈ {requests:.2g} requests ({rate:.3g}/s for {r.duration:g} s) kept as records",
            "set run.records: false or lower run.duration",
        ),
        sessions_field: (sessions * SESSION, f"≈ {sessions:.2g} sessions at once", "lower the population"),
        "tiers": (resources * SERVER_RESOURCE, f"{resources:.2g} server stations and pools", "use fewer servers"),
    }
    problems = []
    total = sum(b for b, _, _ in parts.values())
    if total > MEMORY_BYTES:
        field, (size, what, fix) = max(parts.items(), key=lambda kv: kv[1][0])
        problems.append((field, f"{what} ≈ {_bytes(size)} (the run ≈ {_bytes(total)}; the limit is {_bytes(MEMORY_BYTES)}); {fix}"))
    # Nothing bounds the rate (no think time, no CPU work): still, every session sends a request.
    known, per = (requests, f"({rate:.3g}/s for {r.duration:g} s)") if requests < math.inf else (max(sessions, 1.0), "(one per session at least)")
    events = known * (steps + EVENTS_PER_REQUEST)
    if events > MAX_EVENTS:
        problems.append(
            (
                "run.duration",
                f"≈ {known:.2g} requests {per} × {steps + EVENTS_PER_REQUEST:.3g} events each "
                f"≈ {events:.2g} events (the limit is {MAX_EVENTS:.0e}); lower run.duration, the load or the loop counts",
            )
        )
    return problems


def _request_rate(m: Model, busy: dict, per_session: float) -> float:
    """Requests per second, at most: offered by the population, capped by the busiest CPU."""
    w = m.workload
    if isinstance(w.population, Closed):
        think = dist.mean(w.think)
        offered = w.population.clients / think if think > 0 else math.inf
    else:
        offered = w.population.session_rate * per_session
    most = max(busy.values(), default=0.0)
    return min(offered, 1 / most if most > 0 else math.inf)


def _bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if n < 1000:
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} EB"
