"""The model a server's imported telemetry implies, when no model is given (`tierlab
twin calibrate TRACE… --out TWIN` on `tierlab import otel` traces): the tiers and pools
the trace shows, the observed request mix and arrival rate as the workload, and a
placeholder program per type that `calibrate` then replaces with the measured one.

- the app tier: a `threads` pool and a `db` connection pool, sized from the pool
  metrics the trace carries (`db.client.connection.max`, `tomcat.thread.max`) or from
  `threads` / `connections` (the server's configuration, which no standard metric may
  show); a CPU station (`calibrate` sets its cores from the process's CPU);
- a database of its own (any but an embedded one; the trace's `db` tier) becomes a
  `db` tier with as many cores as connections: its accesses' time is the time a
  connection is held (round trip and database together), which no more connections
  than the pool's can overlap — the twin makes it a demand that queues only for the
  pool;
- the workload: an open population of one-request sessions at the observed request
  rate over the measured seconds (the traces pooled), their types drawn in the observed
  mix of served requests, Poisson — or bursty (the model's `burstiness`) where the
  arrivals per second are over-dispersed (`index_of_dispersion` ≥ BURSTY); or, given
  `clients` (and `think`), a closed population of that many clients drawing each
  request from the mix."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

import numpy as np

from ...errors import InputError
from ...model import LoadedModel, load_model
from ...trace import Trace
from ...trace.imports.otel import CONNECTIONS, DB_TIER, THREADS, TIER

START = "START"
# The arrival process: the index of dispersion of the arrivals per DISPERSION_WINDOW
# seconds (variance / mean of the counts; 1 for Poisson), taken as bursty from BURSTY
# on, from MIN_WINDOWS windows (fewer cannot tell a burst from chance).
DISPERSION_WINDOW, BURSTY, MIN_WINDOWS = 1.0, 1.5, 10
PLACEHOLDER = 0.001  # CPU-seconds of a type's program until `calibrate` measures it


def observed_model(
    traces: list[tuple[str, Trace]],
    threads: int | None = None,
    connections: int | None = None,
    clients: int | None = None,
    think: float | None = None,
    notes: list[str] | None = None,
) -> LoadedModel:
    """The base model `calibrate` refines, from imported traces; `notes` gets what was
    taken from where."""
    notes = notes if notes is not None else []
    for name, t in traces:
        if t.summary["source"] != "import" or TIER not in t.summary["tiers"]:
            raise InputError(
                f"{name}: without --model, give traces imported from a server's OpenTelemetry (`tierlab import otel`); "
                f"a live or simulated trace calibrates with the model it was run from (--model)"
            )
    first = traces[0][1].summary
    served: Counter[str] = Counter()
    offered, seconds = 0, 0.0
    for _, t in traces:
        s = t.summary
        offered += sum(cast(dict[str, int], s["requests"]).values())
        seconds += s["measured_seconds"]
        served.update({k: v["requests"]["ok"] for k, v in s["types"].items() if v["requests"]["ok"]})
    if not served:
        raise InputError(f"{traces[0][0]}: no served requests to calibrate from")
    total = sum(served.values())
    mix = {k: n / total for k, n in sorted(served.items())}
    unserved = sorted({k for _, t in traces for k in t.summary["types"]} - set(served))
    if unserved:
        notes.append(f"types with no served request, not in the workload (no demand to measure): {', '.join(unserved)}")
    sizes = {THREADS: threads, CONNECTIONS: connections}
    for pool, given in list(sizes.items()):
        seen = {p[pool]["size"] for _, t in traces if pool in (p := t.summary["tiers"][TIER]["servers"][0]["pools"])}
        if given is None:
            if not seen:
                option = "--threads" if pool == THREADS else "--connections"
                raise InputError(
                    f"the traces carry no {'thread' if pool == THREADS else 'connection'} pool size (its metrics were not exported): give it with {option}"
                )
            sizes[pool] = max(seen)
            notes.append(f"{TIER}.{pool}: size {sizes[pool]} from the pool's metrics" + (f" (the traces differ: {sorted(seen)})" if len(seen) > 1 else ""))
        elif seen and seen != {given}:
            notes.append(f"{TIER}.{pool}: size {given} as given, where the pool's metrics said {sorted(seen)}")
    remote = DB_TIER in first["tiers"]
    program = [{"acquire": THREADS}, {"cpu": PLACEHOLDER}, {"release": THREADS}]
    if clients is not None:
        population: dict = {"clients": clients}
        chain = {START: mix} | {k: mix for k in mix}
        session_end: dict | str = {"after_requests": 10**9}  # a client's requests go on for the whole run
        notes.append(f"workload: {clients} clients (closed), {think or 0:g} s think time, each request drawn from the observed mix")
    else:
        population = {"session_rate": offered / seconds}
        chain = {START: mix} | {k: {"END_OF_SESSION": 1.0} for k in mix}
        session_end = "chain"
        dispersion = index_of_dispersion(traces)
        burstiness = {"dispersion": round(dispersion, 3)} if dispersion is not None and dispersion >= BURSTY else None
        notes.append(
            f"workload: open, {offered / seconds:.4g} requests/s (the traces' arrivals per measured second), one request per session, the observed mix; "
            + (
                f"arrivals over-dispersed (index of dispersion {dispersion:.2f} per {DISPERSION_WINDOW:g} s): bursty (the model's MMPP)"
                if burstiness
                else f"arrivals Poisson (index of dispersion {dispersion:.2f} per {DISPERSION_WINDOW:g} s, below {BURSTY:g})"
                if dispersion is not None
                else f"arrivals Poisson (fewer than {MIN_WINDOWS} windows of {DISPERSION_WINDOW:g} s to tell)"
            )
        )
    spec: dict[str, Any] = {
        "name": str(first["model"]).removeprefix("otel: "),
        "description": f"observed by OpenTelemetry ({first['model']})",
        "run": {"duration": first["duration"], "warmup": first["warmup"], "window": first["window"], "seed": 1},
        "tiers": {
            TIER: {
                "pools": {THREADS: {"kind": "threads", "size": sizes[THREADS]}, CONNECTIONS: {"kind": "connections", "size": sizes[CONNECTIONS]}},
                "stations": {"cpu": {"kind": "cpu", "cores": 1}},
            },
            DB_TIER: {"stations": {"cpu": {"kind": "cpu", "cores": sizes[CONNECTIONS]}}},
        },
        "requests": {k: {TIER: program} for k in mix},
        "workload": {"population": population, "chain": {"matrix": chain, "start": START}, "think": think or 0.0, "session_end": session_end},
    }
    if clients is None and burstiness:
        spec["workload"]["burstiness"] = burstiness
    if remote:
        notes.append(
            f"{DB_TIER}: a database of its own; an access holds a connection for its span's time ({sizes[CONNECTIONS]} cores: it queues only for the pool)"
        )
    return load_model(spec)


def index_of_dispersion(traces: list[tuple[str, Trace]]) -> float | None:
    """Variance over mean of the requests arriving per DISPERSION_WINDOW seconds over
    the measured periods, the traces' windows pooled (None: too few windows)."""
    counts = []
    for _, t in traces:
        r = t.requests
        if r is None:
            continue
        s = t.summary
        start = r["start"].to_numpy()
        edges = np.arange(s["warmup"], t.end + 1e-9, DISPERSION_WINDOW)
        if len(edges) > 1:
            counts.append(np.histogram(start, edges)[0])
    pooled = np.concatenate(counts) if counts else np.array([])
    if len(pooled) < MIN_WINDOWS or pooled.mean() == 0:
        return None
    return float(pooled.var(ddof=1) / pooled.mean())


def calibrate_observed(
    traces: list[str],
    threads: int | None = None,
    connections: int | None = None,
    clients: int | None = None,
    think: float | None = None,
    **options,
):
    """`calibrate` on imported traces without a model: the base model `observed_model`
    makes; its notes first in the calibration's. `options`: `calibrate`'s."""
    from ...trace import read_trace
    from .calibrate import calibrate

    notes = [
        "handler CPU: no span carries CPU time; the process's CPU (process.cpu.time) apportioned among the served requests by their time outside a remote database"
    ]
    base = observed_model([(t, read_trace(t)) for t in traces], threads, connections, clients, think, notes)
    cal = calibrate(list(traces), base, **options)
    cal.notes[:0] = notes
    return cal
