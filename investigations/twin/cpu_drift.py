"""Does the live bookstore's CPU per request depend on what ran before it? (issue 16)

The twin is calibrated from two runs and divides their CPU among the requests. In
studies/results/twin_quick, at (M, N) = (8, 4), the calibration run at 9.32 sessions/s
cost the process 2.72 ms of CPU per request, and the verification step at 12.65
sessions/s, later in the same study, 1.82 ms: the same configuration at a higher load
cost a third less. The calibration runs came right after the profile's pilots, which
run far beyond capacity. This study repeats one light step at CALIBRATED in three
blocks — on a fresh testbed, right after a run far beyond capacity, and after a rest
— with twin.py --quick's model and run lengths, and reports per run the process's CPU
per served request (the service demand law over the monitor's windows, as `twin
calibrate` reads a run), the handlers' own CPU (the middleware's thread CPU time) and
what no handler accounts for (their difference), and the machine's speed during the
run (the monitor's `cpu_probe_ms`, median: the CPU time of a fixed piece of Python
work).

    python investigations/twin/cpu_drift.py      # SQLite, about 5 min
    python investigations/twin/cpu_drift.py --server java   # the JVM held to one core, about 8 min (results/cpu_drift_java)

On the JVM (added 2026-11-28 22:58 UTC, before its run): the full twin study on one pinned
core (studies/results/twin_java_budget) calibrated at 0.58-0.65 ms of CPU per request
right after its profile's 33 runs, most of them beyond capacity, and its verification
spent 0.435-0.50 ms at the same loads 30-40 min later, the probe unchanged. The same
three blocks there, with the full study's runs (6 + 20 s), one core pinned and warmed
up, at JVM_LIGHT (40% of its ~155 sessions/s) and JVM_OVERLOAD (1.4×), the same criteria.

    python investigations/twin/cpu_drift.py --server java --age 21   # about 13 min (results/cpu_drift_java_age)

`--age N` (added 2026-11-28 23:05 UTC, before its run, after the JVM's three blocks showed
the CPU per request falling run after run — 0.62 ms fresh, 0.45 ms after the rest, the
blocks in time order): N light runs back to back from the warm-up on, nothing between
them, the seeds 1, 2, 3 in turn (each block of three offers the same sessions). Criteria,
written before the run, on the means of the first and last AGE_BLOCK runs:
1. the JVM's CPU per request falls with its age past the warm-up: the last runs' mean at
   least AGE_FALL below the first runs';
2. it levels off within the runs: the last runs' mean within AGE_LEVEL of the mean of the
   AGE_BLOCK runs before them (then a warm-up that long would calibrate a settled JVM).

The criteria, written before the run: the CPU per request is a property of the
configuration and load (what a twin may calibrate once) only if every run's figure is
within 10% of the fresh block's mean; and the probe accounts for the drift (what `twin
verify` corrects each step by) only if every run's handler CPU per request divided by
its probe is within 10% of the fresh block's mean of that ratio."""

from __future__ import annotations

import time

import pandas as pd

from tierlab.analysis.machine import machine
from tierlab.experiments.study.claims import Criterion, Ledger
from tierlab.experiments.study.provenance import output_dir, study_parser, write_result
from tierlab.experiments.twin.classical import demand_law
from tierlab.experiments.twin.measured import cpu_cores, measured
from tierlab.experiments.twin.setup import CALIBRATED, live_setup, own_testbed, sizes

LIGHT, OVERLOAD = 12.0, 60.0  # sessions/s: below and far beyond (8, 4)'s capacity in twin_quick (31.6)
JVM_LIGHT, JVM_OVERLOAD = 62.0, 220.0  # the same on the JVM held to one core (twin_java_budget: 156)
RUNS, REST = 3, 60.0  # runs per block; seconds of rest before the last block
BOUND = 0.10
AGE_BLOCK, AGE_FALL, AGE_LEVEL = 6, 0.10, 0.03  # runs per compared block (two per seed); --age's criteria


def main() -> None:
    ap = study_parser(__doc__, quick=False)
    ap.add_argument("--server", choices=["python", "java"], default="python", help="the bookstore's runtime; java: one core pinned, results/cpu_drift_java")
    ap.add_argument(
        "--age", type=int, help=f"instead of the three blocks: this many light runs back to back (at least {3 * AGE_BLOCK}), results/cpu_drift_<server>_age"
    )
    a = ap.parse_args()
    if a.age is not None and (a.age < 3 * AGE_BLOCK or a.age % RUNS):
        ap.error(f"--age {a.age}: a multiple of {RUNS} (the seeds in turn), at least {3 * AGE_BLOCK} (three blocks of {AGE_BLOCK} to compare)")
    java = a.server == "java"
    out = output_dir("cpu_drift" + ("_java" if java else "") + ("_age" if a.age else ""), a)
    s = sizes(not java)
    light, overload = (JVM_LIGHT, JVM_OVERLOAD) if java else (LIGHT, OVERLOAD)
    rows = []
    with own_testbed(f"cpu-drift-{a.server}", "sqlite", cpu={"app": 1.0} if java else None, server=a.server) as bed:
        _, runner, model = live_setup(bed, s, out)
        at = model.with_changes({"tiers.app.pools.threads.size": CALIBRATED[0], "tiers.app.pools.db.size": CALIBRATED[1]})
        tiers = cpu_cores(at)

        def block(name: str, runs: int = RUNS) -> None:
            for n in range(runs):
                k = n % RUNS + 1
                trace = runner(at.with_changes({"workload.population.session_rate": light, "run.seed": k}))
                # The service demand law, as `twin calibrate` reads a run (twin_quick's 2.72 ms).
                law = demand_law(measured([(f"{name} {k}", trace)], tiers))
                ms = {"cpu_ms": law["demand_law"], "handler_ms": law["direct"], "outside_ms": law["outside_handlers"]}
                rows.append(
                    {"block": name, "run": n + 1, "seed": k, "throughput": trace.summary["throughput"], "probe_ms": machine([trace])["cpu_probe_ms"]}
                    | {c: v * 1e3 for c, v in ms.items()}
                )
                print(rows[-1], flush=True)

        if a.age:
            block("age", a.age)
        else:
            block("fresh")
            runner(at.with_changes({"workload.population.session_rate": overload}))
            block("after overload")
            time.sleep(REST)
            block("after rest")
    table = pd.DataFrame(rows)
    table.to_csv(out / "runs.csv", index=False)
    if a.age:
        _score_age(table, a.server, light, out)
        return
    fresh = float(table[table.block == "fresh"]["cpu_ms"].mean())
    deviation = float((table["cpu_ms"] / fresh - 1).abs().max())
    table["handler_per_probe"] = table["handler_ms"] / table["probe_ms"]
    fresh_ratio = float(table[table.block == "fresh"]["handler_per_probe"].mean())
    corrected = float((table["handler_per_probe"] / fresh_ratio - 1).abs().max())
    summary = {
        "config": list(CALIBRATED),
        "server": a.server,
        "rates": {"light": light, "overload": overload},
        "rest": REST,
        "blocks": table.groupby("block", sort=False)[["cpu_ms", "handler_ms", "outside_ms", "probe_ms", "throughput"]].mean().to_dict(orient="index"),
        "largest_deviation_from_fresh": deviation,
        "handler_per_probe_largest_deviation_from_fresh": corrected,
        "handler_probe_correlation": float(table["handler_ms"].corr(table["probe_ms"])),
    }
    ledger = Ledger()
    ledger.check(
        f"the process's CPU per request at {CALIBRATED} and {light:g} sessions/s is the same whatever ran before: every run within {BOUND:.0%} of the fresh block's mean",
        BOUND,
        deviation,
        Criterion(f"at most {BOUND:.0%}", lambda ours, bound: ours <= bound),
        "the process's CPU per request depends on its history (runs.csv: which block moved, and whether the handlers' CPU or the rest did)",
    )
    ledger.check(
        f"the machine's probe accounts for the drift: every run's handler CPU per request ÷ its probe within {BOUND:.0%} of the fresh block's mean",
        BOUND,
        corrected,
        Criterion(f"at most {BOUND:.0%}", lambda ours, bound: ours <= bound),
        "the handlers' CPU moves with something the probe does not see (runs.csv: handler_ms beside probe_ms)",
    )
    ledger.write(out)
    write_result(out, summary, range(1, RUNS + 1))


def _score_age(table: pd.DataFrame, server: str, light: float, out) -> None:
    """--age's criteria on the runs in order (runs.csv)."""
    cpu = table["cpu_ms"]
    first, before, last = (float(cpu.iloc[i : i + AGE_BLOCK].mean()) for i in (0, len(cpu) - 2 * AGE_BLOCK, len(cpu) - AGE_BLOCK))
    ledger = Ledger()
    ledger.check(
        f"the CPU per request at {CALIBRATED} and {light:g} sessions/s falls with the server's age past its warm-up: the last {AGE_BLOCK} runs' mean at least {AGE_FALL:.0%} below the first {AGE_BLOCK}'s",
        AGE_FALL,
        {"first_ms": first, "last_ms": last, "fall": 1 - last / first},
        Criterion(f"a fall of at least {AGE_FALL:.0%}", lambda ours, bound: ours["fall"] >= bound),
        "the CPU per request does not fall with the server's age (runs.csv, in order)",
    )
    ledger.check(
        f"it levels off within the runs: the last {AGE_BLOCK} runs' mean within {AGE_LEVEL:.0%} of the {AGE_BLOCK} before them",
        AGE_LEVEL,
        {"before_ms": before, "last_ms": last, "change": last / before - 1},
        Criterion(f"within {AGE_LEVEL:.0%}", lambda ours, bound: abs(ours["change"]) <= bound),
        "still moving at the end: a warm-up of this length would not settle it (runs.csv, in order)",
    )
    ledger.write(out)
    summary = {
        "config": list(CALIBRATED),
        "server": server,
        "rate": light,
        "runs": len(table),
        "cpu_ms": [float(x) for x in cpu],
        "handler_ms": [float(x) for x in table["handler_ms"]],
        "probe_ms": [float(x) for x in table["probe_ms"]],
        "blocks_ms": {"first": first, "before_last": before, "last": last},
    }
    write_result(out, summary, range(1, RUNS + 1))


if __name__ == "__main__":
    main()
