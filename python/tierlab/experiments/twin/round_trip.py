"""A statement's round trip in the twin (issue 41 item 2; docs/twin.md, "A statement's
round trip"): what a statement costs the connection that waits for it beyond what the
database executes, and how that grows with the connections held.

Live, a statement holds its connection for a round trip — the driver's send, the
database backend's wake-up and work, the reply's wake-up of the waiting thread — of
which pg_stat_statements' executor time is a small part (on the Python bookstore's
PostgreSQL calibration, 14 µs of the 115 µs per statement the client waited beyond its
own CPU at the light load), and the round trip grows with load as the backends and the
server share the machine's cores (240 µs at the heavy load). A twin with the executor's
time alone held its connections 29% and 45% shorter than those two runs themselves (a
throwaway simulation, 4 seeds, before this existed).

Here the rest of the round trip is a wait inside each connection access, before the
call to the database: a · (1 + b · n), n the connections other requests hold as it
starts — the requests at the database or about to reach it, each competing for the
cores the round trip's wake-ups need (at the Python server, for its interpreter lock
too) — a and b the line through the traces' loads, both measured (`fitted`).
(The statements in the database at once, 0.16–0.28 in the twin at those loads in a first
version that counted them, not kept, grew
too little between them for the wait's doubling: the line through them had no wait of
its own at no contention.)"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ...trace import Trace
from .per_request import scaled_line


@dataclass(frozen=True)
class RoundTrip:
    """The wait per access: `seconds` × (1 + `per` · connections other requests hold),
    exponential (the traces sum a request's statements, so the spread of one round trip
    is not measured)."""

    seconds: float
    per: float = 0.0

    def applied(self, model: dict, tier: str, connections: str, db: str) -> dict:
        """`model` (a twin, as the model file holds it) with the wait before every call
        to tier `db` inside a use of `tier`'s pool `connections`."""
        out = copy.deepcopy(model)
        wait: dict = {"delay": {"exponential": self.seconds}}
        if self.per > 0:
            wait["contention"] = {"pool": connections, "count": "busy", "per": self.per}

        def within(steps: list, using: bool) -> list:
            done = []
            for s in steps:
                if using and s.get("call") == db:
                    done.append(wait)
                for k in ("loop", "use", "transaction"):
                    if k in s:
                        body = s[k]
                        s = s | {k: body | {"steps": within(body["steps"], using or (k != "loop" and body.get("pool") == connections))}}
                done.append(s)
            return done

        for program in out["requests"].values():
            if tier in program:
                program[tier] = within(program[tier], False)
        return out


def waits(traces: list[Trace], tier: str, db: str) -> np.ndarray:
    """Per trace, seconds per connection access the client waited for its statements
    beyond its own CPU (`db_time` − `db_cpu_time`) and beyond what the database executed
    (pg_stat_statements' `total_time`; a simulated trace's: the `db` tier's own CPU
    record): the round trip the twin lacks."""
    out = []
    for t in traces:
        r = t.requests
        if r is None:
            raise InputError("--round-trip needs the traces' per-request records (requests.parquet); run them with records on")
        accesses = float(r[f"{tier}.db_requests"].sum())
        if t.statements is not None:
            executed = float(t.statements["total_time"].sum())
        elif f"{db}.cpu_time" in r:
            executed = float(r[f"{db}.cpu_time"].sum())
        else:
            raise InputError(
                "--round-trip needs the database's own account of its statements (PostgreSQL's pg_stat_statements, statements.parquet): "
                "run the traces with `tierlab live run` against PostgreSQL"
            )
        if accesses == 0:
            raise InputError("--round-trip needs traces whose requests use the database; these made no connection accesses")
        client = float((r[f"{tier}.db_time"] - r[f"{tier}.db_cpu_time"]).sum())
        out.append((client - executed) / accesses)
    return np.array(out)


def fitted(held: np.ndarray, live: np.ndarray) -> RoundTrip:
    """The round trip through the traces' loads: per trace the connections held (mean,
    the others a wait sees as it starts, by arrivals seeing time averages) and the wait
    per access (`waits`), both measured; the line's least squares."""
    if len(live) < 2 or np.ptp(held) == 0:
        raise InputError("--round-trip needs traces at two loads or more (their statements' wait against the connections held); give a second trace")
    if np.any(live <= 0):
        raise InputError("--round-trip: the client waited no longer for its statements than the database executed them; the twin has nothing to add")
    return RoundTrip(*scaled_line(held, live))
