"""`tierlab twin calibrate`: the digital twin of a live system (issue 16)."""

from __future__ import annotations

import math

import click
from rich.table import Table

from . import WholeHelp
from .common import about, changed, err, floats, ints, out, run_length


@click.group(cls=WholeHelp)
def twin() -> None:
    """The digital twin: a model calibrated from live traces."""


@twin.command("calibrate")
@click.argument("traces", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option(
    "--model",
    "model_file",
    type=click.Path(dir_okay=False),
    help="The model the traces were run from (`tierlab live run MODEL`); leave it out for traces of `tierlab import otel`, whose model is made from them.",
)
@click.option(
    "--out", "out_file", required=True, type=click.Path(dir_okay=False), help="The twin's model file (YAML); its report goes beside it as .calibration.json."
)
@click.option(
    "--clients",
    type=click.IntRange(min=1),
    help="The closed population the traces ran with, if `live run --clients` replaced the model's; without --model, the twin's clients (default: an open workload at the observed rate).",
)
@click.option("--session-rate", type=float, help="The open population (sessions/s) the traces ran with, if `live run --session-rate` replaced the model's.")
@click.option("--think", type=click.FloatRange(min=0), help="Without --model: the closed clients' think time, seconds (with --clients).")
@click.option("--threads", type=click.IntRange(min=1), help="Without --model: the server's worker threads M, where its metrics do not say.")
@click.option("--connections", type=click.IntRange(min=1), help="Without --model: the server's connection pool size N, where its metrics do not say.")
@click.option(
    "--dist", "form", type=click.Choice(["lognormal", "empirical"]), default="lognormal", show_default=True, help="How per-request CPU demands are fitted."
)
@click.option(
    "--handoff",
    is_flag=True,
    help="Give the twin's pools the hand-off measured (a freed token idle until its woken waiter takes it), as the waiter's own CPU run, "
    "sized so the twin hands off as long as the traces did at their loads; reported either way.",
)
@click.option(
    "--contention",
    is_flag=True,
    help="Let the application's CPU demands grow with the worker threads other requests hold (Chen & Gorton), up to where the traces' "
    "requests show the growth level off, fitted so the twin uses the CPU per request each trace measured at its load: give traces at two "
    "loads or more.",
)
@click.option(
    "--lock",
    is_flag=True,
    help="Look for an interpreter lock (the process held to one core where 2+ requests compute on the model's 2+ cores) and, where the traces "
    "show one, give the twin it with its hand-off fitted at the traces' loads; SQLite's statements then run beside it (docs/twin.md).",
)
@click.option(
    "--idle-handoff",
    is_flag=True,
    help="With --handoff: hand the pools' tokens over idle (the measured wait, no CPU run) where the twin with the waiters' CPU run grows "
    "the CPU per request between the traces' loads further from what they did; give traces at two loads.",
)
@click.option(
    "--request-growth",
    is_flag=True,
    help="Let the application's CPU demands grow with the worker threads other requests hold as the requests one by one show it "
    "(slope and cap by least squares), where they show it; instead of --contention.",
)
@click.option(
    "--round-trip",
    is_flag=True,
    help="Hold the connections for each statement's round trip beyond what the database executed (the client's wait less its own CPU "
    "and pg_stat_statements' time), growing with the connections other requests hold, the line through the traces' loads: PostgreSQL "
    "traces at two loads or more.",
)
@click.option(
    "--connection-limit",
    type=click.IntRange(min=1),
    help="With --model: the clients' connections the server held at once (Tomcat's maxConnections, waitress's connection_limit less 2), "
    "where the traces did not record it (`live run` records it); the twin's entry tier then holds that many, one per session for its life.",
)
def twin_calibrate(
    traces,
    model_file,
    out_file,
    clients,
    session_rate,
    think,
    threads,
    connections,
    form,
    handoff,
    contention,
    lock,
    idle_handoff,
    request_growth,
    round_trip,
    connection_limit,
) -> None:
    """Write a model of the live system that TRACES measured: per request type its
    CPU demand (a fitted distribution), its database accesses and their demand; the
    pools as the server ran them; the application's effective cores from its CPU; the
    workload of MODEL. The classical estimates (service demand law, utilization
    regression) are printed beside the direct ones. A simulated trace with per-request
    records calibrates too: a check of the calibration on demands that are known.

    Without --model, TRACES are a server's OpenTelemetry (`tierlab import otel`): the
    workload is the observed mix and arrival rate (or --clients with --think), the pools
    as its metrics or --threads/--connections say, the CPU per request apportioned from
    the process's CPU (docs/twin.md).

    The traces must keep the server busy (two or more requests in service in ten
    windows or more): README's "A run busy enough to calibrate" gives the commands."""
    from ..errors import InputError
    from ..experiments.twin import calibrate
    from ..model import load_model

    if clients is not None and session_rate is not None:
        raise InputError("give --clients (a closed population) or --session-rate (an open one), not both")
    population = {"clients": clients} if clients is not None else {"session_rate": session_rate} if session_rate is not None else None
    options = {
        "form": form,
        "handoff": handoff,
        "contention": contention,
        "lock": lock,
        "idle_handoff": idle_handoff,
        "request_growth": request_growth,
        "round_trip": round_trip,
    }
    if model_file is None:
        if connection_limit is not None:
            raise InputError("--connection-limit needs --model: an OpenTelemetry server's twin is made from its spans, whose sessions it does not know")
        if session_rate is not None:
            raise InputError("without --model the open workload is the traces' own rate; give --clients N (and --think) for a closed one")
        from ..experiments.twin.observed import calibrate_observed  # the otel extra's: only without a model

        with about(traces[0]):
            cal = calibrate_observed(list(traces), threads, connections, clients, think, **options)
        return _written(cal, out_file)
    if think is not None or threads is not None or connections is not None:
        raise InputError("--think, --threads and --connections describe a server without a model; with --model, the model says them")
    if connection_limit is not None:
        options["connection_limit"] = connection_limit
    with about(model_file):
        model = load_model(model_file)
        cal = calibrate(list(traces), model.with_changes({"workload.population": population}) if population else model, **options)
    _written(cal, out_file)


def _written(cal, out_file: str) -> None:
    """Write the twin and its report, and print the calibration's figures."""
    path = cal.write(out_file)
    out.print(demand_table(cal))
    law, cores = cal.law, cal.cores
    out.print(
        f"service demand law: {law['demand_law'] * 1e3:.3f} ms CPU per request (process CPU {law['utilization_cores']:.2f} cores / throughput) "
        f"vs {law['direct'] * 1e3:.3f} ms in the handlers: {round(law['outside_handlers'] * 1e3, 3) + 0.0:.3f} ms outside them",  # + 0.0: no "-0.000"
        markup=False,
    )
    reg = cal.regression
    residual = reg.attrs["relative_residual_all"]
    out.print(
        f"utilization regression over {reg.attrs['windows']} windows: {reg.loc['(all)', 'regression'] * 1e3:.3f} ms per request, "
        f"{reg.loc['(background)', 'regression']:.2f} cores in the background "
        + (f"(relative residual {residual:.2f})" if math.isfinite(residual) else "(no residual: the process used no CPU in the windows)"),
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
        t.add_row(
            str(name),
            f"{row['requests']:.0f}",
            f"{row['cpu_time'] * 1e3:.3f}",
            shown(r * 1e3, ".3f", "— (no windows)"),
            f"{row['app_cpu'] * 1e3:.3f}",
            f"{row['db_requests']:.0f}",
            f"{row['db_queries']:.1f}",
            shown(row.get("db_per_call", float("nan")) * 1e3, ".3f", "— (no access)"),
        )
    return t


def shown(x: float, spec: str, missing: str) -> str:
    """`x` formatted, or what is missing in its place: no figure prints as nan."""
    return format(x, spec) if math.isfinite(x) else missing


@twin.command("verify")
@click.argument("twin_file", type=click.Path(dir_okay=False))
@click.option("--loads", required=True, help="Loads to run, live and simulated: browsers (a closed workload) or sessions/s (an open one), e.g. 4,8,12.")
@click.option("--config", "configs", multiple=True, help="M,N to run at (repeatable; default: the twin's pools).")
@click.option(
    "--mix",
    "mixes",
    multiple=True,
    help="A request mix to run at, as the chain's reweighting STATE=FACTOR,… (e.g. SRES=2; repeatable; default: the twin's own).",
)
@click.option("--http", "mapping", type=click.Path(dir_okay=False), required=True, help="The request types' HTTP mapping (YAML).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder for verify.csv, verify.json and verify.png.")
@click.option("--workdir", default=".tierlab/live", show_default=True, type=click.Path(file_okay=False), help="The running testbed's state folder.")
@run_length(duration=20.0, warmup=5.0)
def twin_verify(twin_file, loads, configs, mixes, mapping, out_dir, workdir, duration, warmup) -> None:
    """Run each load (at each --config) live on the testbed and simulated on the twin;
    print per step throughput, response time (mean, p50, p90, p99), the app's CPU and
    pool occupancy — measured, predicted, relative error — and write them."""
    import json
    from pathlib import Path

    from ..experiments.twin.verify import verify, write
    from ..live.mapping import load_mapping
    from ..live.testbed import Testbed
    from ..report.plots import twin_plot

    with about(twin_file):
        twin = changed(twin_file).with_run(duration=duration, warmup=warmup)
    report = Path(twin_file).with_suffix(".calibration.json")
    calibration = json.loads(report.read_text()) if report.is_file() else {}
    speed = calibration.get("cores", {}).get("speed", 1.0)
    probe = calibration.get("machine", {}).get("cpu_probe_ms")
    pairs = [tuple(ints(c)) for c in configs]
    if any(len(p) != 2 for p in pairs):
        raise click.BadParameter("give M,N", param_hint="--config")
    reweights = [_mix(m) for m in mixes]
    table = verify(
        twin,
        Testbed(workdir),
        load_mapping(mapping),
        floats(loads),
        [(p[0], p[1]) for p in pairs] or None,
        speed,
        reweights or None,
        log=lambda s: err.print(s, markup=False),
        probe=probe,
    )
    folder = write(table, out_dir)
    twin_plot(table, folder / "verify.png")
    out.print(verify_table(table))
    out.print(f"wrote {folder / 'verify.csv'}, verify.json and verify.png", markup=False)


def _mix(text: str) -> dict[str, float]:
    """`SRES=2,BUYR=0.5` → {"SRES": 2.0, "BUYR": 0.5}."""
    out = {}
    for part in text.split(","):
        state, _, factor = part.partition("=")
        try:
            out[state.strip()] = float(factor)
        except ValueError:
            raise click.BadParameter(f"{part!r}: give STATE=FACTOR, e.g. SRES=2", param_hint="--mix") from None
    return out


def verify_table(table) -> Table:
    """Per step: each figure as measured / predicted (error)."""
    figures = [c.removesuffix(".measured") for c in table.columns if c.endswith(".measured")]
    t = Table(title="twin vs live: measured / predicted (error)")
    for c in ("M", "N", "mix", "load", "speed live / twin", "machine", *figures):
        t.add_column(c, justify="right")
    for _, row in table.iterrows():
        t.add_row(
            f"{row.M:.0f}",
            f"{row.N:.0f}",
            str(row["mix"]),
            f"{row.load:g}",
            f"{shown(row['speed.live'], '.2f', '— (never 2+ in service)')} / {row['speed.calibrated']:.2f}",
            shown(row["speed.machine"], ".2f", "— (no probe)"),
            *[_versus(row[f + ".measured"], row[f + ".predicted"], row[f + ".error"]) for f in figures],
        )
    return t


def _versus(measured: float, predicted: float, error: float) -> str:
    """measured / predicted (error), saying what is missing: a response time where no
    request completed, an error where the measured figure is 0."""
    m = shown(measured, ".4g", "none completed")
    p = shown(predicted, ".4g", "none completed")
    e = shown(error, "+.0%", "no error: measured 0" if measured == 0 else "—")
    return f"{m} / {p} ({e})"
