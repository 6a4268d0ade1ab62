"""`tierlab load`: the model's workload against a live server."""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .sim import SimulationInterrupted

err = Console(stderr=True)


def live_progress(label: str, quiet: bool = False) -> Progress:
    """A progress bar with the live request counts (see `live_tick`)."""
    return Progress(
        TextColumn(f"[bold]{label}[/] {{task.description}}"),
        BarColumn(),
        TextColumn("{task.percentage:>5.1f}%"),
        TextColumn("{task.fields[counts]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        disable=quiet,
        transient=True,
    )


def live_tick(bar: Progress, task):
    """The load generator's progress callback for `bar`."""
    def tick(fraction: float, finished: float = 0, failed: float = 0) -> None:
        bar.update(task, completed=fraction, counts=f"{finished:,.0f} done, {failed:,.0f} failed")
    return tick


@click.command("load")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--http", "mapping", type=click.Path(dir_okay=False), required=True, help="The request types' HTTP mapping (YAML).")
@click.option("--target", help="HOST:PORT to load (default: the mapping's target).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Folder for the trace (client view).")
@click.option("--duration", type=float, help="Seconds to run (default: the model's run.duration).")
@click.option("--warmup", type=float, help="Seconds not measured at the start (default: the model's).")
@click.option("--seed", type=int, help="Override run.seed.")
@click.option("--clients", type=int, help="A closed population of N browsers instead of the model's population.")
@click.option("--session-rate", type=float, help="An open population: sessions per second.")
@click.option("--records/--no-records", default=None, help="Keep per-request records (default: the model's run.records).")
@click.option("--workers", type=int, help="Load generator threads (default: one per core, at most 4).")
@click.option("--quiet", is_flag=True, help="No progress bar or tables.")
def load_cmd(model, mapping, target, out_dir, duration, warmup, seed, clients, session_rate, records, workers, quiet) -> None:
    """Run MODEL's workload against a live HTTP server and write the trace to --out."""
    from .cli import print_summary
    from .live import load

    with live_progress("loading", quiet) as bar:
        task = bar.add_task(target or "", total=1.0, counts="")
        try:
            trace = load(model, mapping, target=target, duration=duration, warmup=warmup, seed=seed, clients=clients,
                         session_rate=session_rate, records=records, workers=workers, progress=live_tick(bar, task))
            stopped = False
        except SimulationInterrupted as e:
            trace, stopped = e.result, True
    folder = trace.write(out_dir)
    if not quiet:
        print_summary(trace)
        errors = {k: v for k, v in trace.summary["errors"].items() if v}
        if errors:
            err.print("[yellow]failed requests:[/] " + ", ".join(f"{k} {v}" for k, v in errors.items()))
    if stopped:
        err.print(f"[yellow]interrupted[/] after {trace.summary['elapsed']:.1f} s; wrote what was measured to {folder}")
        sys.exit(130)
    err.print(f"trace written to [bold]{folder}[/]")
