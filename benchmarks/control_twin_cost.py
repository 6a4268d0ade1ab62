"""What a `twin` decision costs per interval (issue 42's target: ≤ 100 ms), paid as
`tierlab control --strategy twin` pays it: the interval's observation serialised to
JSON, `_core.Controller.decide` (the guards, in Rust) calling the Python
`TwinController.decide` — two simulations of the twin at the sizes in force (at the
observed load, to re-calibrate it; past it, its capacity), then one per candidate of the
search, each `horizon` seconds of the observed load, or past it in heavy traffic (each
candidate's capacity) — and the sizes and the reason back.

Two twins, each observed from a run of itself (an interval of a known system:
`twin.observed`): the unit tests' two-tier model (one request type, 100 requests/s)
and examples/tpcw_2tier.yaml (TPC-W's 14 types at 30 requests/s, up to 101 connection
requests each); the twin's parameters at their defaults (grid 4, horizon 10 s) and
lighter (grid 3, horizon 5 s); the interval observed at the model's own pool sizes and
load ("light"), at a load that puts those sizes at 80% of their capacity or more
("heavy": HEAVY, where the search simulates capacities), and — the two-tier model with
its app's core binding every size (8 ms a request, the database 1 ms) — in heavy
traffic where no size has more capacity ("alike": both searches, the capacities' and
then the one at the load); each decision as it comes (it
holds) and with its first test forced to "move" (it pays the confirmation every move pays:
two more simulations, three horizons each). Per case: ms
per decision (median
and worst over the decisions, wall clock), the process's CPU ms per decision (median:
on a machine shared with other work the wall clock includes their share), simulations
per decision, ms per simulation (the decision's wall time over its simulations), and
the median's share of the 100 ms target.
The last line is the figures as JSON.

    nice -n 19 python benchmarks/control_twin_cost.py [--decisions 5]

Measured 2026-11-27: see benchmarks/README.md, "Online control: the twin's decision".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from pathlib import Path
from unittest import mock

import tierlab
from tierlab import _core
from tierlab.model.spec import Twin
from tierlab.run import twin as twin_module
from tierlab.run.twin import Bounds, TwinController, observed

TARGET_S = 0.1
BOUNDS: Bounds = {"threads": (2, 64), "connections": (1, 32)}
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PARAMS = {"default (grid 4, horizon 10 s)": Twin(), "light (grid 3, horizon 5 s)": Twin(grid=3, horizon=5.0)}
# The interval's load: the model's own, and one in heavy traffic, past HEAVY of the
# model's sizes' capacity (two-tier's (4, 2) serve ~230 requests/s; TPC-W's (20, 15)
# about 3.3 sessions/s of its shopping mix, the thinks shortened to 1 s so that the
# interval's request rate has followed: studies/control.py's load step at its peak).
CPU_BOUND = [{"acquire": "threads"}, {"cpu": {"exponential": 0.008}}, {"use": {"pool": "db", "steps": [{"call": "db"}]}}, {"release": "threads"}]
LOADS: dict[str, dict[str, dict]] = {
    "light": {"two-tier": {}, "tpcw_2tier": {}},
    "heavy": {
        "two-tier": {"workload.population.session_rate": 200.0},
        "tpcw_2tier": {"workload.population.session_rate": 3.0, "workload.think": {"exponential": 1.0}},
    },
    "alike": {"two-tier": {"requests.job.app": CPU_BOUND, "requests.job.db": [{"cpu": {"exponential": 0.001}}], "workload.population.session_rate": 110.0}},
}
# A decision that holds, and one that moves: the second has its first test forced to
# "move", so it pays what every move pays on top, the confirmation (the choice and the
# sizes in force simulated three horizons long, another seed) — whatever sizes win.
KINDS = {"holds": False, "moves": True}


def two_tier() -> dict:
    """The unit tests' model (tests/unit/test_control_twin.py): 100 requests/s, 4 ms of
    the app's core on a thread, then 8 ms of a 4-core database on a connection."""
    app = {"pools": {"threads": {"kind": "threads", "size": 4}, "db": {"kind": "connections", "size": 2}}, "stations": {"cpu": {"kind": "cpu", "cores": 1}}}
    program = {
        "app": [{"acquire": "threads"}, {"cpu": {"exponential": 0.004}}, {"use": {"pool": "db", "steps": [{"call": "db"}]}}, {"release": "threads"}],
        "db": [{"cpu": {"exponential": 0.008}}],
    }
    return {
        "name": "two-tier",
        "run": {"duration": 60, "warmup": 0, "seed": 3, "records": False, "window": 1.0},
        "tiers": {"app": app, "db": {"stations": {"cpu": {"kind": "cpu", "cores": 4}}}},
        "requests": {"job": program},
        "workload": {"population": {"session_rate": 100.0}, "chain": {"matrix": {"job": {"END_OF_SESSION": 1}}, "start": "job"}},
    }


TWINS = {
    "two-tier": lambda: tierlab.load_model(two_tier()),
    "tpcw_2tier": lambda: tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_run(duration=70, warmup=10),
}


def case(model: tierlab.LoadedModel, params: Twin, decisions: int, moves: bool) -> dict:
    """`decisions` decisions of a fresh controller on the model's own interval; with
    `moves`, each decision's first test — at the load or of the capacities — says move
    (it is then confirmed)."""
    o = json.dumps(observed(tierlab.simulate(model, records=False).summary, "app", {"threads": "threads", "connections": "db"}))
    spec = {"interval": 5.0, "bounds": {k: list(v) for k, v in BOUNDS.items()}, "strategy": {"strategy": "twin"} | params.model_dump(exclude={"model"})}
    c = _core.Controller(json.dumps(spec), TwinController(model, params, BOUNDS, "app"))
    seconds, cpu, heavy = [], [], []
    forced = contextlib.ExitStack()
    if moves:
        for test in ("_worth_it", "_more_capacity"):
            forced.enter_context(mock.patch.object(TwinController, test, return_value=(True, "moved (forced by the benchmark)")))
    # Every simulation of the twin goes through its module's run_engine: counted there.
    with forced, mock.patch.object(twin_module, "run_engine", wraps=twin_module.run_engine) as engine:
        for _ in range(decisions):
            t0, c0 = time.perf_counter(), time.process_time()
            _, reason = c.decide(o)
            seconds.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            heavy.append("heavy traffic" in reason)
    sims = engine.call_count
    median = statistics.median(seconds)
    per = sims / decisions
    return {
        "ms_per_decision": round(median * 1e3, 1),
        "max_ms": round(max(seconds) * 1e3, 1),
        "cpu_ms_per_decision": round(statistics.median(cpu) * 1e3, 1),
        "simulations_per_decision": per,
        "heavy_traffic": sum(heavy) / decisions,  # the share of decisions that searched capacities
        "ms_per_simulation": round(median * 1e3 / per, 2),
        "share_of_target": round(median / TARGET_S, 2),
        "met": median <= TARGET_S,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--decisions", type=int, default=5, help="decisions per case")
    a = ap.parse_args()
    result: dict = {"decisions": a.decisions, "target_ms": TARGET_S * 1e3}
    print(
        f"{'twin':12} {'load':6} {'parameters':32} {'decision':9} {'ms/decision':>12} {'max ms':>8} {'CPU ms':>8} {'sims':>6} {'ms/sim':>8} {'of 100 ms':>10} {'heavy':>6}"
    )
    for name, make in TWINS.items():
        for load, changes in LOADS.items():
            if name not in changes:
                continue
            model = make().with_changes(changes[name])
            for label, params in PARAMS.items():
                for kind, moves in KINDS.items():
                    f = case(model, params, a.decisions, moves)
                    result[f"{name}, {load}, {label}, {kind}"] = f
                    print(
                        f"{name:12} {load:6} {label:32} {kind:9} {f['ms_per_decision']:>12.1f} {f['max_ms']:>8.1f} "
                        f"{f['cpu_ms_per_decision']:>8.1f} {f['simulations_per_decision']:>6.0f} {f['ms_per_simulation']:>8.2f} {f['share_of_target']:>10.2f} {f['heavy_traffic']:>6.0%}"
                    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
