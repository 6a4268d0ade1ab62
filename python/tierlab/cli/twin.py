"""`tierlab twin calibrate`: the digital twin of a live system (issue 16)."""

from __future__ import annotations

import click
from rich.table import Table

from .common import about, out


@click.group()
def twin() -> None:
    """The digital twin: a model calibrated from live traces."""


@twin.command("calibrate")
@click.argument("traces", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--model", "model_file", required=True, type=click.Path(dir_okay=False), help="The model the traces were run from (`tierlab live run MODEL`).")
@click.option(
    "--out", "out_file", required=True, type=click.Path(dir_okay=False), help="The twin's model file (YAML); its report goes beside it as .calibration.json."
)
@click.option("--clients", type=int, help="The closed population the traces ran with, if `live run --clients` replaced the model's.")
@click.option("--session-rate", type=float, help="The open population (sessions/s) the traces ran with, if `live run --session-rate` replaced the model's.")
@click.option(
    "--dist", "form", type=click.Choice(["lognormal", "empirical"]), default="lognormal", show_default=True, help="How per-request CPU demands are fitted."
)
def twin_calibrate(traces, model_file, out_file, clients, session_rate, form) -> None:
    """Write a model of the live system that TRACES measured: per request type its
    CPU demand (a fitted distribution), its database accesses and their demand; the
    pools as the server ran them; the application's effective cores from its CPU; the
    workload of MODEL. The classical estimates (service demand law, utilization
    regression) are printed beside the direct ones."""
    from ..errors import InputError
    from ..experiments.twin import calibrate
    from ..model import load_model

    if clients is not None and session_rate is not None:
        raise InputError("give --clients (a closed population) or --session-rate (an open one), not both")
    population = {"clients": clients} if clients is not None else {"session_rate": session_rate} if session_rate is not None else None
    with about(model_file):
        model = load_model(model_file)
        cal = calibrate(list(traces), model.with_changes({"workload.population": population}) if population else model, form)
    path = cal.write(out_file)
    out.print(demand_table(cal))
    law, cores = cal.law, cal.cores
    out.print(
        f"service demand law: {law['demand_law'] * 1e3:.3f} ms CPU per request (process CPU {law['utilization_cores']:.2f} cores / throughput) "
        f"vs {law['direct'] * 1e3:.3f} ms in the handlers: {law['outside_handlers'] * 1e3:.3f} ms outside them",
        markup=False,
    )
    reg = cal.regression
    out.print(
        f"utilization regression over {reg.attrs['windows']} windows: {reg.loc['(all)', 'regression'] * 1e3:.3f} ms per request, "
        f"{reg.loc['(background)', 'regression']:.2f} cores in the background (relative residual {reg.attrs['relative_residual_all']:.2f})",
        markup=False,
    )
    out.print(f"effective cores: ceiling {cores['ceiling']:.2f} → {int(cores['cores'])}, speed {cores['speed']:.2f}", markup=False)
    for note in cal.notes:
        out.print(f"note: {note}", markup=False)
    out.print(f"wrote {path} and {path.with_suffix('.calibration.json')}", markup=False)


def demand_table(cal) -> Table:
    """Per type, in ms: the handler's CPU time measured, the regression's estimate
    beside it, and what the twin's programs use."""
    t = Table(title="demands per request (ms)")
    for c in ("type", "served", "handler CPU", "regression", "twin app CPU", "accesses", "statements", "DB per access"):
        t.add_column(c, justify="left" if c == "type" else "right")
    reg = cal.regression
    for name, row in cal.demands.iterrows():
        r = reg.loc[name, "regression"] if name in reg.index else float("nan")
        per = row.get("db_per_call", float("nan"))
        t.add_row(
            str(name),
            f"{row['requests']:.0f}",
            f"{row['cpu_time'] * 1e3:.3f}",
            f"{r * 1e3:.3f}",
            f"{row['app_cpu'] * 1e3:.3f}",
            f"{row['db_requests']:.0f}",
            f"{row['db_queries']:.1f}",
            "—" if per != per else f"{per * 1e3:.3f}",
        )
    return t
