"""`tierlab simulate`, `tierlab schema`, `tierlab ramp`: running a model."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from .common import FORCE, MACHINE_OUTPUT, changed, execute, floats, for_machines, for_people, ints, out, run_length, with_run_length, write_json


@click.command("simulate")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Folder for the trace.")
@click.option("--seed", type=int, help="Override run.seed.")
@run_length()
@click.option("--records/--no-records", default=None, help="Keep per-request records (default: the model's run.records).")
@click.option("--clients", type=click.IntRange(min=1), help="A closed population of N clients instead of the model's population.")
@click.option("--think", type=click.FloatRange(min=0), help="Seconds a client thinks between requests (the model's workload.think).")
@click.option("--quiet", is_flag=True, help="No progress bar or tables.")
@FORCE
def simulate_cmd(model: str, out_dir: str, seed, duration, warmup, records, clients, think, quiet: bool, force: bool) -> None:
    """Simulate MODEL (YAML) and write requests.parquet, timeseries.parquet and summary.json to --out."""
    from ..run import simulate

    population = {"workload.population": {"clients": clients}} if clients is not None else {}
    loaded = changed(model).with_changes(population | ({"workload.think": think} if think is not None else {}))
    execute(
        "simulating",
        loaded.spec.name,
        lambda tick: simulate(loaded, seed=seed, duration=duration, warmup=warmup, records=records, progress=tick),
        out_dir,
        quiet,
        counts=False,
        force=force,
    )


@click.command("schema")
def schema_cmd() -> None:
    """Print the model file's JSON Schema (for editor completion and validation)."""
    from ..model import json_schema

    click.echo(json.dumps(json_schema(), indent=2))


@click.command("ramp")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option(
    "--loads",
    help="Clients (closed) or sessions/s (open) per step, comma-separated. "
    "Default: 20 steps up to the first doubling from --start at which the p90 has grown tenfold.",
)
@click.option("--start", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True, help="The first load when --loads is not given.")
@click.option("--seeds", default="1", show_default=True, help="Seeds per step (averaged).")
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes (default: one per core).")
@click.option("--scheduler", help="Run on this Dask scheduler instead.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Write ramp.csv, result.json and ramp.png here.")
@run_length()
@MACHINE_OUTPUT
def ramp_cmd(model, loads, start, seeds, workers, scheduler, out_dir, duration, warmup, json_out, csv_out) -> None:
    """Black-box capacity: a load ramp and the knee of its p90 response time (the CSV:
    one row per load)."""
    from ..experiments.ramp import ramp, retransmission_threshold, scalability
    from ..report.plots import ramp_plot
    from .analyze import print_ramp

    loaded = with_run_length(model, duration, warmup)
    table, knee = ramp(loaded, floats(loads) if loads else None, seeds=ints(seeds), workers=workers, scheduler=scheduler, start=start)
    threshold = retransmission_threshold(table)
    usl = scalability(loaded, table)
    result = {"knee": asdict(knee), "usl": usl and usl.as_json(), "retransmission_threshold": threshold, "steps": table.to_dict(orient="records")}
    if for_people(json_out, csv_out):
        no_knee = (
            f"no knee: the p90 curve does not turn from flat to steep over these loads [{knee.method}]; extend them, ramp in finer steps "
            "or longer runs (or leave --loads out to search for the range)"
        )
        print_ramp(table, knee, usl, no_knee)
        if threshold is not None:
            out.print(f"more than 1% of requests retransmitted from load {threshold:g} on")
    for_machines(json_out, csv_out, lambda: result, lambda: table)
    if out_dir:
        folder = Path(out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        table.to_csv(folder / "ramp.csv", index=False)
        write_json(str(folder / "result.json"), result)
        ramp_plot(table, knee.load, folder / "ramp.png")
