"""`tierlab load` (the model's workload against any HTTP server) and `tierlab live …`
(the testbed: the bookstore behind tierlab's middleware, executing models)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from . import WholeHelp
from .common import FORCE, changed, err, execute, options, run_length, with_run_length
from .size import PROFILE_OPTIONS, VALIDATE_OPTIONS, run_profile, run_validate

if TYPE_CHECKING:  # the CLI imports the live side only when a command runs
    from ..live.mapping import Mapping


@click.command("load")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--http", "mapping", type=click.Path(dir_okay=False), required=True, help="The request types' HTTP mapping (YAML).")
@click.option("--target", help="HOST:PORT to load (default: the mapping's target).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Folder for the trace (client view).")
@run_length()
@click.option("--seed", type=int, help="Override run.seed.")
@click.option("--clients", type=int, help="A closed population of N browsers instead of the model's population.")
@click.option("--session-rate", type=float, help="An open population: sessions per second.")
@click.option("--records/--no-records", default=None, help="Keep per-request records (default: the model's run.records).")
@click.option("--workers", type=click.IntRange(1, 64), help="Load generator threads, 1 to 64 (default: one per core, at most 4).")
@click.option("--quiet", is_flag=True, help="No progress bar or tables.")
@click.option("--metrics-port", type=click.IntRange(1, 65535), help="Serve the generator's progress to Prometheus on 127.0.0.1:PORT/metrics during the run.")
@FORCE
def load_cmd(model, mapping, target, out_dir, duration, warmup, seed, clients, session_rate, records, workers, quiet, metrics_port, force) -> None:
    """Run MODEL's workload against a live HTTP server and write the trace to --out."""
    from ..live import generate_load
    from ..live.mapping import load_mapping

    load_args = dict(
        duration=duration, warmup=warmup, seed=seed, clients=clients, session_rate=session_rate, records=records, workers=workers, metrics_port=metrics_port
    )
    execute(
        "loading",
        target or "",
        lambda tick: generate_load(changed(model), load_mapping(mapping), target=target, progress=tick, **load_args),
        out_dir,
        quiet,
        force=force,
    )


# `live run`'s exit status when the trace was written but lacks the server's side (the
# server ended during the run); 2 is a wrong input, 130 Ctrl-C.
INCOMPLETE = 3

HTTP = click.option("--http", "mapping", type=click.Path(dir_okay=False), default=None, help="HTTP mapping (default: tpcw_http.yaml next to MODEL).")
CACHING = "DB connection caching: a connection held per request, or per transaction block."
WORKDIR = click.option(
    "--workdir", default=".tierlab/live", show_default=True, type=click.Path(file_okay=False), help="The testbed's state, database file and logs."
)


@click.group("live", cls=WholeHelp)
def live() -> None:
    """The live testbed: the TPC-W bookstore behind tierlab's middleware, on a real database."""


@live.command("up")
@WORKDIR
@click.option(
    "--db",
    type=click.Choice(["sqlite", "postgres"]),
    default="sqlite",
    show_default=True,
    help="sqlite: a file in --workdir; postgres: the project's cluster (installed from Debian's packages if missing).",
)
@click.option(
    "--model",
    type=click.Path(dir_okay=False),
    help="The cluster form: K bookstore servers (the app tier's `servers`) behind P proxies running its `dispatch:` policy, "
    "sessions in Redis if the tier has `session_state`; --port is then the first proxy's (default: a free port), every other port free.",
)
@click.option(
    "--server",
    type=click.Choice(["python", "java"]),
    default="python",
    show_default=True,
    help="The bookstore's runtime: Python (waitress + tierlab's middleware) or the JVM (embedded Tomcat + HikariCP, built with Maven on first use).",
)
@click.option(
    "--proxy-limit",
    help="With --model: each proxy limits every backend's requests in flight, answering 503 with Retry-After past it: "
    "SIZE (fixed), or SIZE:LEAST..GREATEST (Gradient2 re-sizes it within the bounds every second, from SIZE).",
)
@click.option("--port", type=int, default=None, help="The bookstore's HTTP port (loopback; default 8080).")
@click.option("--admin-port", type=int, default=8081, show_default=True, help="Loopback admin endpoint (token in WORKDIR/token).")
@click.option("--threads", type=int, default=20, show_default=True, help="M, worker threads.")
@click.option("--connections", type=int, default=10, show_default=True, help="N, DB connections.")
@click.option("--caching", type=click.Choice(["request", "transaction"]), default="transaction", show_default=True, help=CACHING)
@click.option("--items", "num_items", type=int, default=1000, show_default=True, help="TPC-W NUM_ITEMS.")
@click.option("--ebs", "num_ebs", type=int, default=1, show_default=True, help="TPC-W NUM_EBS (2,880 customers each).")
@click.option(
    "--otel", type=click.Path(dir_okay=False), help="Also export the server's OpenTelemetry traces and metrics to this file (OTLP/JSON lines; the otel extra)."
)
@click.option(
    "--cpu",
    "cpu_text",
    help="CPU budgets by tier, in cores: app=0.5,db=0.5 (the bookstore's processes; PostgreSQL's — SQLite runs inside the bookstore's, under app's). "
    "Each tier's processes in a cgroup of that quota; a budget of whole cores pinned to cores of its own instead, where a core is left for the rest "
    "(the load generator kept off them during runs). Released by `live down`. Where cgroups cannot be written, says so and runs without.",
)
@click.option("--no-pin", is_flag=True, help="Hold whole-core budgets by a quota over every core too, not pinned to cores of their own.")
@click.option(
    "--connection-limit",
    type=int,
    help="Connections the bookstore holds at once (Tomcat's maxConnections, waitress's connection_limit; default 900, at most 1,000 on the "
    "Python server): past it new ones wait in the listen backlog. Each session keeps its connection through its thinks, so it bounds the "
    "sessions open at once.",
)
@click.option(
    "--cpu-from",
    "cpu_model",
    type=click.Path(dir_okay=False),
    help="CPU budgets from this model: its pooled tier's CPU station (cores × speed) for app, the next tier's for db (not on SQLite).",
)
def live_up(
    workdir,
    db,
    server,
    model,
    proxy_limit,
    port,
    admin_port,
    threads,
    connections,
    caching,
    num_items,
    num_ebs,
    otel,
    cpu_text,
    no_pin,
    connection_limit,
    cpu_model,
) -> None:
    """Start the database and the bookstore in the background (or, with --model, a cluster of them behind proxies)."""
    from ..live import cpu_budget, lifecycle

    if cpu_text and cpu_model:
        raise click.UsageError("--cpu and --cpu-from both set the budgets; give one")
    cpu = cpu_budget.parse(cpu_text) if cpu_text else None
    if cpu_model:
        cpu = cpu_budget.from_model(changed(cpu_model))
        if db == "sqlite" and cpu.pop("db", None) is not None:
            err.print("the model's db tier has no budget here: SQLite runs inside the bookstore's process, under app's")
    if proxy_limit is not None and model is None:
        raise click.UsageError("--proxy-limit limits the cluster's proxies: give --model")
    if model is not None:
        if cpu or connection_limit is not None:
            raise click.UsageError("--cpu and --connection-limit set one bookstore; start it without --model")
        from ..live.cluster import up_cluster
        from ..live.proxy import Limit

        if otel:
            raise click.UsageError("--otel exports one bookstore's telemetry; start it without --model")

        limit = Limit.parse(proxy_limit) if proxy_limit is not None else None
        state = up_cluster(changed(model), workdir, db=db, port=port, num_items=num_items, num_ebs=num_ebs, log=err.print, server=server, limit=limit)
        err.print(f"cluster up on http://{state.target}: {len(state.servers)} servers, {len(state.proxies)} proxies, {state.db}; logs in {workdir}")
        return
    state = lifecycle.up(
        workdir,
        db=db,
        port=8080 if port is None else port,
        admin_port=admin_port,
        threads=threads,
        connections=connections,
        caching=caching,
        num_items=num_items,
        num_ebs=num_ebs,
        log=err.print,
        otel=otel,
        server=server,
        cpu=cpu,
        pin=not no_pin,
        connection_limit=connection_limit,
    )
    err.print(f"bookstore ({server}) up on http://{state.target} (pid {state.pid}, {state.db}); log {state.log}")


@live.command("down")
@WORKDIR
def live_down(workdir) -> None:
    """Stop what `tierlab live up` started."""
    from ..live import lifecycle

    err.print("stopped" if lifecycle.down(workdir) else "nothing was running")


@live.command("status")
@WORKDIR
def live_status(workdir) -> None:
    """Whether the testbed is up, and its pools (JSON)."""
    from ..live import lifecycle, testbed
    from ..live.admin import Admin

    state = lifecycle.status(workdir)
    if state is None:
        err.print("down")
        sys.exit(1)
    if state.servers:  # the cluster form: every process and port, each server's pools
        bed = testbed.Testbed(workdir)
        servers = [m | {"metrics": a.metrics()} for m, a in zip(state.servers, bed.admins)]
        proxies = [m | {"summary": p.summary()} for m, p in zip(state.proxies, bed.proxies)]
        click.echo(json.dumps({"target": state.target, "db": state.db, "sessions": state.sessions, "servers": servers, "proxies": proxies}, indent=2))
        return
    # the tiers' CPU budgets in force and how they are held, or why none are
    budgets = {
        "cpu": state.cpu,
        "cgroups": state.cgroups,
        "cpusets": state.cpusets,
        "pinned": state.pinned,
        "cpu_note": state.cpu_note,
        "pin_note": state.pin_note,
    }
    click.echo(json.dumps({"target": state.target, "pid": state.pid, "db": state.db, **budgets, **Admin(state.workdir, state.admin_port).metrics()}, indent=2))


@live.command("config")
@WORKDIR
@click.option("--threads", type=int, help="Resize M.")
@click.option("--connections", type=int, help="Resize N.")
@click.option("--caching", type=click.Choice(["request", "transaction"]), help=CACHING)
@click.option("--timeout", type=float, help="Seconds a request waits for a thread or a connection before a 503.")
def live_config(workdir, threads, connections, caching, timeout) -> None:
    """Set the running bookstore's pools by hand (`live run MODEL` sets them from the model)."""
    from ..live import testbed

    pools: dict[str, dict] = {"threads": {"size": threads, "timeout": timeout}, "connections": {"size": connections, "timeout": timeout, "caching": caching}}
    settings = {p: {k: v for k, v in kv.items() if v is not None} for p, kv in pools.items()}
    change = {p: kv for p, kv in settings.items() if kv}
    results = [admin.configure(change) for admin in testbed.Testbed(workdir).admins]  # every server of a cluster
    click.echo(json.dumps(results[0] if len(results) == 1 else results, indent=2))


@live.command("run")
@click.argument("model", type=click.Path(dir_okay=False))
@HTTP
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Folder for the trace (client records joined with the server's).")
@WORKDIR
@run_length()
@click.option("--seed", type=int, help="Override run.seed.")
@click.option("--clients", type=int, help="A closed population of N browsers instead of the model's population.")
@click.option("--session-rate", type=float, help="An open population: sessions per second.")
@click.option("--tier", help="The model tier whose pools the server takes (default: the one with a threads and a connections pool).")
@click.option("--quiet", is_flag=True, help="No progress bar or tables.")
@FORCE
def live_run(model, mapping, out_dir, workdir, duration, warmup, seed, clients, session_rate, tier, quiet, force) -> None:
    """Execute MODEL on the running testbed: the server's pools set from the model (sizes,
    timeouts, caching, priorities), then one measured load; the trace has the simulator's
    schema (client records joined with the server's phases, its series, the monitor's)."""
    from ..live import testbed

    bed = testbed.Testbed(workdir)
    load_args = dict(duration=duration, warmup=warmup, seed=seed, clients=clients, session_rate=session_rate)
    folder = execute(
        "measuring",
        bed.state.target,
        lambda tick: bed.run(changed(model), _mapping(model, mapping), tier, progress=tick, **load_args),
        out_dir,
        quiet,
        force=force,
    )
    missing = json.loads((folder / "summary.json").read_text())["missing"]
    for what in [w for w in missing if w.endswith(".statements")]:  # a cross-check absent: the run itself is whole
        err.print(f"[yellow]warning:[/] no {what}: {missing.pop(what)}")
    if missing:
        for what, why in missing.items():
            err.print(f"[red]missing[/] {what}: {why}")
        err.print(f"the run is incomplete: the client's view is in {folder} (failures counted), the rest is lost")
        sys.exit(INCOMPLETE)
    err.print(f"analyse it with `tierlab analyze profile {folder}` (or bottleneck, fluctuations)")


LIVE_RUNS = (
    HTTP,
    WORKDIR,
    run_length(duration=40.0, warmup=10.0),
)


def _live(model: str, mapping, workdir, duration, warmup, tier):
    """The model with live run lengths, and the runner that measures the testbed."""
    from ..live.testbed import LiveRunner, Testbed

    loaded = with_run_length(model, duration, warmup)
    return loaded, LiveRunner(Testbed(workdir), _mapping(model, mapping), tier)


def _mapping(model: str, mapping: str | None) -> Mapping:
    """The HTTP mapping of --http, or the one beside MODEL: read once, at the edge."""
    from ..live.mapping import load_mapping

    return load_mapping(mapping or Path(model).with_name("tpcw_http.yaml"))


@live.command("profile")
@PROFILE_OPTIONS
@options(
    *LIVE_RUNS,
    click.option("--bound", type=click.FloatRange(min=0, min_open=True), required=True, help="Sessions/s no (M, N) serves; the pilot runs offer twice this."),
)
def live_profile(model, out_dir, M, N, seeds, overload, refine, tier, mapping, workdir, duration, warmup, bound) -> None:
    """Profiling tests on the running bookstore: its pools resized through the admin
    endpoint for each (M, N), one run after another (`tierlab size optimize` reads the result)."""
    loaded, runner = _live(model, mapping, workdir, duration, warmup, tier)
    run_profile(loaded, out_dir, M, N, seeds, overload, refine, tier, runner=runner, bound=bound, log=err.print)


@live.command("validate")
@VALIDATE_OPTIONS
@options(*LIVE_RUNS)
def live_validate(model, configs, start, step, runs, tier, json_out, csv_out, mapping, workdir, duration, warmup) -> None:
    """The maximum sustainable session throughput of (M, N) configurations, measured on
    the running bookstore (Totok & Karamcheti: ≥ 60% of the runs serve every request)."""
    loaded, runner = _live(model, mapping, workdir, duration, warmup, tier)
    run_validate(loaded, configs, start, step, runs, tier, json_out, csv_out, runner=runner, log=err.print)
