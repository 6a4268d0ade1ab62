"""Generate load: drive a live HTTP server with a model's workload (the Rust load
generator, `crates/loadgen`)."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Sequence

from .. import _core
from ..errors import InputError
from ..model import LoadedModel, ModelWarning
from ..run.interrupt import raise_if_stopped
from ..trace import Trace
from ..trace.core import from_core
from .loadgen_metrics import serving
from .mapping import Mapping, compile_requests


def generate_load(
    model: LoadedModel,
    mapping: Mapping,
    *,
    target: str | None = None,
    also: Sequence[str] = (),
    duration: float | None = None,
    warmup: float | None = None,
    seed: int | None = None,
    clients: int | None = None,
    session_rate: float | None = None,
    records: bool | None = None,
    workers: int | None = None,
    connect_timeout: float = 3.0,
    progress: Callable[..., None] | None = None,
    metrics_port: int | None = None,
) -> Trace:
    """Run the model's workload (population, chain, think times, bursts) against
    `target` (HOST:PORT; default: the mapping's; with `also`, session s goes to
    `[target, *also][s mod n]`: a cluster's several proxies). `clients` / `session_rate` replace the
    population (closed / open). `progress(fraction, finished, failed)` is called every
    0.1 s; with `metrics_port` the same counters are served to Prometheus on
    127.0.0.1:PORT/metrics during the run (`loadgen_metrics`). Ctrl-C raises `RunInterrupted` whose `.result` has what was measured.
    Raises InputError at once if the target is unreachable or the configuration is refused."""
    if clients is not None and session_rate is not None:
        raise InputError("give clients (a closed population) or session_rate (an open one), not both")
    population = {"clients": clients} if clients is not None else {"session_rate": session_rate} if session_rate is not None else None
    run = {"seed": seed, "duration": duration, "warmup": warmup, "records": records}
    changes = {f"run.{k}": v for k, v in run.items() if v is not None} | ({"workload.population": population} if population else {})
    loaded = model.with_changes(changes)  # validated once, and not at all without changes
    m = mapping
    with warnings.catch_warnings():
        # Capacity warnings are about the model's tiers, which a live run does not use.
        warnings.simplefilter("ignore", ModelWarning)
        engine = loaded.engine()
    names = [t["name"] for t in engine["types"]]
    requests, values = compile_requests(m, names)
    run = engine["run"]
    config = {
        "workload": engine["workload"],
        "type_names": names,
        "target": target or m.target,
        "also": list(also),
        "requests": requests,
        "values": values,
        "duration": run["duration"],
        "warmup": run["warmup"],
        "seed": run["seed"],
        "window": run["window"],
        "records": run["records"],
        "timeout": m.timeout,
        "connect_timeout": connect_timeout,
        "workers": workers or min(os.cpu_count() or 1, 4),
    }
    with serving(metrics_port, progress, names) as (tick, latency):
        try:
            out = _core.generate_load(json.dumps(config), tick, latency)
        except ValueError as e:  # the generator refused its configuration or the target
            raise InputError(str(e)) from None
    trace = from_core(out, loaded.spec.name)
    raise_if_stopped(out, trace)
    return trace
