"""`tierlab twin verify`: the twin against the live system, step by step — each load
(and pool configuration) run live on the testbed and simulated on the twin, and per
step the figures side by side with the twin's relative error. Configurations and loads
the twin was not calibrated on are the honest test."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import psutil

from ...analysis.machine import machine
from ...errors import InputError
from ...live import cpu_budget
from ...live.mapping import Mapping
from ...live.testbed import LiveRunner, Testbed
from ...model import LoadedModel
from ...model.pools import PoolSetting
from ...model.spec import Closed, Cpu
from ...run import simulate
from ...trace import Trace
from ...trace.schema import figures
from . import truth
from .calibrate import effective_cores
from .measured import cpu_cores, measured

PERCENTILES = ("mean", "p50", "p90", "p99")
# The twin runs exactly as long as the live step, warm-up included, so that both see the
# same start-up transient (sessions that outlast the warm-up have not all started by
# then: simulated three times as long, the twin was nearer steady state than the live
# run and over-predicted its throughput by 18-26% at 40% of capacity in
# studies/twin.py's first run), and with the step's seed: the generator and the
# simulator seed the session arrivals and each session's walk and think times alike
# (workload::rng), so a step's sessions are the same draws live and on the twin, and
# the step compares two systems, not two samples of walks. (The mean of three seeds
# compared one 20 s sample of arrivals with their expectation: +4.7% to +8.3% at every
# 40% step of studies/results/twin's SQLite testbed; with the step's seed and the walks
# drawn from shared streams in event order, PostgreSQL's light steps were still 10.7% to
# 13.3% low; with the same walks, -0.4% to +0.8%.)


def verify(
    twin: LoadedModel,
    bed: Testbed,
    mapping: Mapping,
    loads: list[float],
    configs: list[tuple[int, int]] | None = None,
    speed: float = 1.0,
    mixes: list[dict[str, float]] | None = None,
    log: Callable[[str], None] = lambda _: None,
    probe: float | None = None,
    recorded: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per (M, N) × mix × load: measured, predicted and the relative error of
    throughput, response time (mean, p50, p90, p99), the app process's CPU (cores busy)
    and each pool's mean occupancy. A load is the twin's population: browsers for a
    closed workload, sessions/s for an open one. `speed`: the calibration's (the twin's
    CPU station runs at it; its cores busy are scaled back to the machine's), beside
    the speed the live process got in each step. A mix reweights the chain
    (`workload.chain.reweight`: state → factor on every transition into it); {} is the
    twin's own.

    `probe`: the machine's speed during the calibration (`cpu_probe_ms`, its report's
    `machine`). Given it, and a step whose monitor recorded the machine, the twin runs
    that step with every CPU at `probe` ÷ the step's probe (`speed.machine`): the
    machine's drift between calibration and step is measured, not the twin's to
    predict. The errors at the calibration's speed are kept beside
    (`<figure>.error_calibration_speed`, throughput and mean response time).

    `recorded`: a table this function wrote before. Its steps are not run live again:
    their measured side (figures, speeds, probe) is taken from it and only the twin's
    side is recomputed — a changed twin checked against the same live runs."""
    setting = PoolSetting.find(twin)
    runner = LiveRunner(bed, mapping)  # a step whose server ended stops the verification, named
    population = "clients" if isinstance(twin.spec.workload.population, Closed) else "session_rate"
    cpus = [st for st in twin.spec.tiers[setting.tier].stations.values() if isinstance(st, Cpu)]
    twin_cores = (cpus[0].cores if cpus else 1) * speed
    configs = configs or [(twin.spec.tiers[setting.tier].pools[setting.threads].size, twin.spec.tiers[setting.tier].pools[setting.connections].size)]
    rows = []
    for (M, N), mix, load in itertools.product(configs, mixes or [{}], loads):
        size = {"workload.population": {population: int(load) if population == "clients" else load}}
        model = twin.with_changes(setting.changes(M, N) | size | ({"workload.chain.reweight": mix} if mix else {}))
        key = {"M": M, "N": N, "mix": mix_label(mix), "load": load}
        before = _recorded(recorded, key)
        if before is None:
            live = runner(model)
            step_probe, seen_speed = machine([live])["cpu_probe_ms"], live_speed(live, cpu_cores(model))
            seen_figures = _figures(live, setting, psutil.cpu_count() or 1)
        else:
            step_probe, seen_speed = before["probe_ms.live"], before["speed.live"]
            seen_figures = {c.removesuffix(".measured"): v for c, v in before.items() if c.endswith(".measured")}
        faster = probe / step_probe if probe and step_probe else float("nan")
        fixed = _figures(simulate(model), setting, twin_cores)
        at_step = fixed if math.isnan(faster) else _figures(simulate(_at_speed(model, faster)), setting, twin_cores)
        row = key | {"speed.calibrated": speed, "speed.live": seen_speed, "speed.machine": faster}
        row["probe_ms.live"] = step_probe  # so the twin's side can be recomputed from this table
        row["live"] = "recorded" if before is not None else "run"
        for name, seen in seen_figures.items():
            row |= {f"{name}.measured": seen, f"{name}.predicted": at_step[name], f"{name}.error": _error(at_step[name], seen)}
            if name in ("throughput", "rt_mean"):
                row[f"{name}.predicted_calibration_speed"] = fixed[name]
                row[f"{name}.error_calibration_speed"] = _error(fixed[name], seen)
        rows.append(row)
        error = _error(at_step["throughput"], seen_figures["throughput"])
        log(
            f"M={M} N={N} mix {mix_label(mix)} load={load:g}: throughput {row['throughput.measured']:.1f} live, {row['throughput.predicted']:.1f} twin "
            + (f"({error:+.1%})" if math.isfinite(error) else "(no error: nothing was served live)")
        )
    return pd.DataFrame(rows)


def repeated(steps: pd.DataFrame, reference: float | None) -> pd.DataFrame:
    """`verify`'s steps run in several repeats (a `repeat` column) as the truth the twin
    is scored against, one row per step (M, N, mix, load): each repeat's live
    throughput and mean response time brought to the `reference` probe (the
    calibration's: `truth.summarized`), their mean, 95% half-width and relative
    half-width, beside the twin's figure at the calibration's speed and its error
    against the mean."""
    names = ("throughput", "rt_mean")
    config = list(zip(steps["M"], steps["N"], steps["mix"], steps["load"]))
    keys = list(dict.fromkeys(config))
    repeats = pd.DataFrame(
        {"repeat": steps["repeat"], "config": config, "probe_ms": steps["probe_ms.live"]} | {f"raw_{n}": steps[f"{n}.measured"] for n in names}
    )
    _, found = truth.summarized(repeats, keys, reference)
    rows = []
    for key in keys:
        mine = steps[[c == key for c in config]]
        row: dict = dict(zip(("M", "N", "mix", "load"), key)) | {"repeats": len(mine)}
        for name in names:
            seen = found[[c == key and f == name for c, f in zip(found["config"], found["figure"])]].iloc[0]
            # The twin at the calibration's speed runs the same model and seed in every repeat.
            twin = float(mine[f"{name}.predicted_calibration_speed"].iloc[0])
            row |= {
                f"{name}.measured": seen["mean"],
                f"{name}.halfwidth": seen["halfwidth"],
                f"{name}.relative": seen["relative"],
                f"{name}.predicted": twin,
                f"{name}.error": _error(twin, seen["mean"]),
            }
        rows.append(row)
    return pd.DataFrame(rows)


def _at_speed(model: LoadedModel, speed: float) -> LoadedModel:
    """`model` with every CPU station of every tier `speed` times as fast."""
    return model.with_changes(
        {f"tiers.{t}.stations.{n}.speed": st.speed * speed for t, spec in model.spec.tiers.items() for n, st in spec.stations.items() if isinstance(st, Cpu)}
    )


def _recorded(table: pd.DataFrame | None, key: dict) -> dict | None:
    """The row of `table` (a verify table) for the step `key`, None if it has none."""
    if table is None:
        return None
    match = table[(table.M == key["M"]) & (table.N == key["N"]) & (table["mix"] == key["mix"]) & (table["load"] == key["load"])]
    return match.iloc[0].to_dict() if len(match) else None


def _error(predicted: float, measured: float) -> float:
    return predicted / measured - 1 if measured else float("nan")


def mix_label(mix: dict[str, float]) -> str:
    """`SRES=2,BUYR=0.5`, or `model` for the twin's own mix."""
    return ",".join(f"{k}={v:g}" for k, v in mix.items()) or "model"


def live_speed(trace: Trace, tiers: dict[str, int | None]) -> float:
    """The share of its cores the live process got in this step (as `calibrate` measures
    it; NaN if the step never had two requests in service): where it differs from the
    calibrated speed, the machine, not the twin, changed."""
    try:
        m = measured([("step", trace)], tiers)
        e = effective_cores(m, cpu_budget.recorded([trace]).get(m.tier))
        return e["busy_mean"] / e["cores"]
    except InputError:
        return float("nan")


def _figures(trace: Trace, setting: PoolSetting, cores: float) -> dict[str, float]:
    """One step's figures, live or simulated; `cores`: the machine's cores that a busy
    share of the app's CPU station stands for (live: the machine's; the twin: its
    station's cores × the calibrated speed)."""
    out = {"throughput": trace.summary["throughput"]}
    rt = figures(trace.summary["response_time"])
    for p in PERCENTILES:
        out[f"rt_{p}"] = rt.get(p, float("nan"))
    server = trace.summary["tiers"][setting.tier]["servers"][0]
    out["app_cpu_cores"] = server["stations"]["cpu"]["utilization"] * cores if "cpu" in server["stations"] else float("nan")
    for pool in (setting.threads, setting.connections):
        out[f"{pool}_busy"] = server["pools"][pool]["mean_busy"]
    return out


def write(table: pd.DataFrame, out: str | Path) -> Path:
    """`verify.csv` and `verify.json` in `out`."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    table.to_csv(folder / "verify.csv", index=False)
    rows = json.loads(table.to_json(orient="records"))
    (folder / "verify.json").write_text(json.dumps({"steps": rows}, indent=2) + "\n")
    return folder
