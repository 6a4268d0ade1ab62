"""`tierlab load`: the model's workload against a live server."""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .cli_sizing import PROFILE_OPTIONS, VALIDATE_OPTIONS, _options, run_profile, run_validate
from .sim import SimulationInterrupted

err = Console(stderr=True)


def live_progress(label: str, quiet: bool = False, counts: bool = True) -> Progress:
    """A run's progress bar (simulated or live); `counts`: with the live request counts
    (see `live_tick`)."""
    return Progress(
        TextColumn(f"[bold]{label}[/] {{task.description}}"),
        BarColumn(),
        TextColumn("{task.percentage:>5.1f}%"),
        *([TextColumn("{task.fields[counts]}")] if counts else []),
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


HTTP = click.option("--http", "mapping", type=click.Path(dir_okay=False), default=None,
                    help="HTTP mapping (default: tpcw_http.yaml next to MODEL).")
WORKDIR = click.option("--workdir", default=".tierlab/live", show_default=True, type=click.Path(file_okay=False),
                       help="The testbed's state, database file and logs.")


@click.group("live")
def live() -> None:
    """The live testbed: the TPC-W bookstore behind tierlab's middleware, on a real database."""


@live.command("up")
@WORKDIR
@click.option("--db", type=click.Choice(["sqlite", "postgres"]), default="sqlite", show_default=True,
              help="sqlite: a file in --workdir; postgres: the project's cluster (installed from Debian's packages if missing).")
@click.option("--port", type=int, default=8080, show_default=True)
@click.option("--admin-port", type=int, default=8081, show_default=True, help="Loopback admin endpoint (token in WORKDIR/token).")
@click.option("--threads", type=int, default=20, show_default=True, help="M, worker threads.")
@click.option("--connections", type=int, default=10, show_default=True, help="N, DB connections.")
@click.option("--caching", type=click.Choice(["request", "transaction"]), default="transaction", show_default=True)
@click.option("--items", "num_items", type=int, default=1000, show_default=True, help="TPC-W NUM_ITEMS.")
@click.option("--ebs", "num_ebs", type=int, default=1, show_default=True, help="TPC-W NUM_EBS (2,880 customers each).")
def live_up(workdir, db, port, admin_port, threads, connections, caching, num_items, num_ebs) -> None:
    """Start the database and the bookstore in the background."""
    from .live import testbed

    state = testbed.up(workdir, db=db, port=port, admin_port=admin_port, threads=threads, connections=connections,
                       caching=caching, num_items=num_items, num_ebs=num_ebs, log=err.print)
    err.print(f"bookstore up on http://{state.target} (pid {state.pid}, {state.db}); log {state.log}")


@live.command("down")
@WORKDIR
def live_down(workdir) -> None:
    """Stop what `tierlab live up` started."""
    from .live import testbed

    err.print("stopped" if testbed.down(workdir) else "nothing was running")


@live.command("status")
@WORKDIR
def live_status(workdir) -> None:
    """Whether the testbed is up, and its pools (JSON)."""
    from .live import testbed

    state = testbed.status(workdir)
    if state is None:
        err.print("down")
        sys.exit(1)
    click.echo(json.dumps({"target": state.target, "pid": state.pid, "db": state.db, **testbed.Admin(state).metrics()}, indent=2))


@live.command("config")
@WORKDIR
@click.option("--threads", type=int, help="Resize M.")
@click.option("--connections", type=int, help="Resize N.")
@click.option("--caching", type=click.Choice(["request", "transaction"]))
def live_config(workdir, threads, connections, caching) -> None:
    """Resize the running bookstore's pools (through the admin endpoint)."""
    from .live import testbed

    settings = {k: v for k, v in {"threads": threads, "connections": connections, "caching": caching}.items() if v is not None}
    click.echo(json.dumps(testbed.Testbed(workdir).admin.configure(**settings), indent=2))


@live.command("run")
@click.argument("model", type=click.Path(dir_okay=False))
@HTTP
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True)
@WORKDIR
@click.option("--duration", type=float)
@click.option("--warmup", type=float)
@click.option("--seed", type=int)
@click.option("--clients", type=int)
@click.option("--session-rate", type=float)
@click.option("--quiet", is_flag=True)
def live_run(model, mapping, out_dir, workdir, duration, warmup, seed, clients, session_rate, quiet) -> None:
    """One measured load against the running testbed: the client's records joined with
    the server's phase profile (app.* columns) and the resource monitor's series."""
    from .cli import print_summary
    from .live import testbed

    bed = testbed.Testbed(workdir)
    with live_progress("measuring", quiet) as bar:
        task = bar.add_task(bed.state.target, total=1.0, counts="")
        trace = bed.run(model, _mapping(model, mapping), duration=duration, warmup=warmup, seed=seed, clients=clients,
                        session_rate=session_rate, progress=live_tick(bar, task))
    folder = trace.write(out_dir)
    if not quiet:
        print_summary(trace)
    err.print(f"trace written to [bold]{folder}[/] (profile it with `tierlab profile {folder}`)")


LIVE_RUNS = (
    HTTP,
    WORKDIR,
    click.option("--duration", type=float, default=30.0, show_default=True, help="Measured seconds per run (after the warm-up)."),
    click.option("--warmup", type=float, default=10.0, show_default=True),
)


def _live(model: str, mapping, workdir, duration, warmup, tier):
    """The model with live run lengths, and the runner that measures the testbed."""
    from .live.testbed import LiveRunner, Testbed
    from .model import load_model

    loaded = load_model(model).with_changes({"run.duration": warmup + duration, "run.warmup": warmup})
    return loaded, LiveRunner(Testbed(workdir), _mapping(model, mapping), tier)


def _mapping(model: str, mapping: str | None) -> str:
    from pathlib import Path

    return mapping or str(Path(model).with_name("tpcw_http.yaml"))


@live.command("profile")
@PROFILE_OPTIONS
@_options(*LIVE_RUNS, click.option("--bound", type=float, required=True,
                                   help="Sessions/s no (M, N) serves; the pilot runs offer twice this."))
def live_profile(model, out_dir, M, N, seeds, overload, tier, mapping, workdir, duration, warmup, bound) -> None:
    """Profiling tests on the running bookstore: its pools resized through the admin
    endpoint for each (M, N), one run after another (`tierlab size optimize` reads the result)."""
    loaded, runner = _live(model, mapping, workdir, duration, warmup, tier)
    run_profile(loaded, out_dir, M, N, seeds, overload, tier, runner=runner, bound=bound)


@live.command("validate")
@VALIDATE_OPTIONS
@_options(*LIVE_RUNS)
def live_validate(model, configs, start, step, runs, tier, json_out, mapping, workdir, duration, warmup) -> None:
    """The maximum sustainable session throughput of (M, N) configurations, measured on
    the running bookstore (Totok & Karamcheti: ≥ 60% of the runs serve every request)."""
    loaded, runner = _live(model, mapping, workdir, duration, warmup, tier)
    run_validate(loaded, configs, start, step, runs, tier, json_out, runner=runner)
