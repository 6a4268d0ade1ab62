"""Black-box capacity (Andreolini et al.): step the load up, measure the 90th
percentile of the response time at each step, and take the knee of that curve
(`tierlab.analysis.knee`) as the capacity; each step also names its bottleneck."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis.bottleneck import bottleneck
from ..analysis.knee import Knee, find_knee
from ..analysis.usl import Usl
from ..analysis.usl import fit as fit_usl
from ..errors import InputError
from ..model import LoadedModel
from ..model.spec import Closed
from ..run.sweep import Run, sweep
from ..trace import Trace
from ..trace.outcome import backlogged
from ..trace.schema import figures
from .study.inputs import as_input


def load_path(model: LoadedModel) -> str:
    """The model field a ramp steps: clients (closed) or the session rate (open)."""
    closed = isinstance(model.spec.workload.population, Closed)
    return "workload.population.clients" if closed else "workload.population.session_rate"


def _point(trace: Trace) -> dict:
    """What a ramp keeps of each run: the p90 curve, and what limits the system there."""
    s = trace.summary
    rt = figures(s["response_time"])
    b = bottleneck(trace)
    r = trace.requests
    return {
        "throughput": s["throughput"],
        "p90": rt.get("p90"),
        "mean": rt.get("mean"),
        "ok": s["requests"]["ok"],
        "rejected": s["requests"]["rejected"],
        "unfinished": s["requests"]["unfinished"],
        "overloaded": backlogged(s["requests"]),
        "retransmitted": float((r.retransmissions > 0).mean()) if r is not None and len(r) else float("nan"),
        "bottleneck": f"{b.tier}.{b.resource}" if b else None,
    }


def _runs(model: LoadedModel, loads, seeds) -> tuple[list[tuple], list[Run]]:
    path = load_path(model)
    if any(x <= 0 for x in loads):
        raise InputError(f"loads must be positive ({path}); got {list(loads)}")
    keys = [(x, s) for x in loads for s in seeds]
    return keys, [Run({path: int(x) if path.endswith("clients") else float(x)}, s) for x, s in keys]


def bracket(model: LoadedModel, start: float, seeds=(1,), blowup: float = 10.0, steps: int = 12, workers=None, scheduler=None) -> float:
    """An upper end for a ramp that holds the knee: double the load from `start` until
    it is well past the knee — the p90 is `blowup` times its value at `start` (the
    queue builds), or doubling the load raised the throughput by less than a quarter
    (it has flattened; with timeouts the p90 may stop growing first). Raises if
    neither happens within `steps` doublings."""
    first = last = float("nan")
    for k in range(steps):
        load = start * 2**k
        keys, runs = _runs(model, [load], seeds)
        here = pd.DataFrame(sweep(model, runs, _point, workers=workers, scheduler=scheduler, progress=None))
        p90, throughput = pd.to_numeric(here.p90).mean(), here.throughput.mean()
        first = p90 if k == 0 else first
        if k > 0 and (p90 >= blowup * first or throughput < 1.25 * last):
            return load
        last = throughput
    raise InputError(
        f"between load {start:g} and {load:g} the p90 response time never grew {blowup:g}× and the "
        f"throughput kept growing: no knee in reach; give the loads to ramp explicitly"
    )


def ramp(
    model: LoadedModel, loads=None, seeds=(1,), workers=None, scheduler=None, progress: str | None = "ramp", start: float = 1.0, points: int = 20
) -> tuple[pd.DataFrame, Knee]:
    """Run the model at every load (and seed) in parallel; the per-load means and the
    knee of the p90 curve. Without loads: `points` evenly spaced steps up to the
    load `bracket` finds from `start`."""
    if loads is None:
        top = bracket(model, start, seeds, workers=workers, scheduler=scheduler)
        # Rounded before they become rates (the rounding rule, studies/README.md): numpy's
        # spacing, not the model, would otherwise decide the last bit of each load.
        loads = np.array([as_input(x) for x in np.linspace(top / points, top, points)])
        if load_path(model).endswith("clients"):
            loads = np.unique(np.maximum(1, np.round(loads)))
    loads = sorted(loads)
    keys, runs = _runs(model, loads, seeds)
    measured = sweep(model, runs, _point, workers=workers, scheduler=scheduler, progress=progress)
    df = pd.DataFrame([{"load": x, "seed": s, **p} for (x, s), p in zip(keys, measured)])
    table = df.groupby("load", as_index=False)[["throughput", "p90", "mean", "ok", "rejected", "unfinished", "overloaded", "retransmitted"]].mean()
    # The resource named most often over the seeds.
    table["bottleneck"] = df.groupby("load")["bottleneck"].agg(lambda b: b.mode().iloc[0] if b.notna().any() else None).to_numpy()
    return _with_knee(table)


def _with_knee(table: pd.DataFrame) -> tuple[pd.DataFrame, Knee]:
    """The knee of the p90 curve, and each step marked `saturated` by the knee's own
    rule (from the first load whose throughput is within 2% of the highest, unless that
    is the last step; at the latest from the first whose runs were mostly overloaded),
    so that the rows and the knee line agree."""
    knee = find_knee(table.load, table.p90, table.throughput, overloaded=table.overloaded >= 0.5)
    return table.assign(saturated=False if knee.saturation is None else table.load >= knee.saturation), knee


def ramp_of_traces(traces: list[Trace], loads=None) -> tuple[pd.DataFrame, Knee, Usl | None]:
    """A ramp from runs made elsewhere (imported from another load tool, or live):
    one step per trace at its load — the given concurrency (e.g. k6's VUs) or, without
    it, the mean number of requests in flight (Little's L) — with the knee of the p90
    curve and the USL through the throughput (4 steps or more)."""
    if loads is not None and len(loads) != len(traces):
        raise InputError(f"{len(loads)} loads for {len(traces)} runs; give one load per run, in the same order")
    rows = [{"load": float(x) if loads is not None else t.summary["little"]["mean_in_system"], **_point(t)} for x, t in zip(loads or traces, traces)]
    table, knee = _with_knee(pd.DataFrame(rows).sort_values("load", kind="stable").reset_index(drop=True))
    usl = fit_usl(table.load, table.throughput) if table.load.nunique() >= 4 else None
    return table, knee, usl


def retransmission_threshold(table: pd.DataFrame, share: float = 0.01) -> float | None:
    """The lowest load of a ramp at which more than `share` of the requests saw a TCP
    retransmission (Wang et al.'s threshold workload); None if none did. Needs runs
    with per-request records."""
    over = table[table.retransmitted > share]
    return float(over.load.min()) if len(over) else None


def scalability(model: LoadedModel, table: pd.DataFrame) -> Usl | None:
    """The Universal Scalability Law through a ramp's throughput, when its load is a
    number of clients (a closed workload: the USL's N); None for an open workload
    (sessions per second are no concurrency) or a ramp of fewer than 4 steps."""
    if not load_path(model).endswith("clients") or table.load.nunique() < 4:
        return None
    return fit_usl(table.load, table.throughput)
