"""`tierlab size …` and `tierlab cost …`: pool sizing (Totok & Karamcheti) and the
contention cost model (Chen & Gorton)."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import InputError
from . import WholeHelp
from .common import MACHINE_OUTPUT, about, err, for_machines, for_people, ints, options, out, run_length, with_run_length, write_json


@click.group("size", cls=WholeHelp)
def size() -> None:
    """Size thread and connection pools (Totok & Karamcheti)."""


PROFILE_OPTIONS = options(
    click.argument("model", type=click.Path(dir_okay=False)),
    click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder for the profile."),
    click.option("--threads", "M", default="5,10,15,20,30,50", show_default=True, help="Thread pool sizes M to profile."),
    click.option("--connections", "N", default="1,2,4,5,10,15,20,30,40", show_default=True, help="Connection pool sizes N (points with M ≥ N are run)."),
    click.option("--seeds", default="1", show_default=True, help="Seeds per point (results are pooled)."),
    click.option("--overload", type=click.FloatRange(min=0), default=0.1, show_default=True, help="Offer (1 + overload) × the measured capacity."),
    click.option(
        "--refine",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        help="Rounds that then close in on each point's capacity, between the last rate that served all and the first that rejected.",
    ),
    click.option("--tier", help="The tier whose pools are sized (default: the one with a threads and a connections pool)."),
)
VALIDATE_OPTIONS = options(
    click.argument("model", type=click.Path(dir_okay=False)),
    click.option("--config", "configs", multiple=True, required=True, help="M,N to measure (repeatable)."),
    click.option("--start", type=click.FloatRange(min=0, min_open=True), required=True, help="First rate to try (e.g. the predicted λ), sessions/s."),
    click.option("--step", type=click.FloatRange(min=0, min_open=True), default=0.05, show_default=True, help="Rate grid, sessions/s."),
    click.option("--runs", type=click.IntRange(min=1), default=5, show_default=True, help="Runs per rate; a rate passes if ≥ 60% serve every request."),
    click.option("--tier", help="The tier whose pools are sized."),
    MACHINE_OUTPUT,
)
SIMULATED = options(
    click.option("--workers", type=click.IntRange(min=1), help="Local worker processes (default: one per core)."),
    click.option("--scheduler", help="Run on this Dask scheduler (tcp://host:8786) instead."),
    run_length(),
)


@size.command("profile")
@PROFILE_OPTIONS
@SIMULATED
def size_profile(model, out_dir, M, N, seeds, overload, refine, tier, workers, scheduler, duration, warmup) -> None:
    """Profiling tests: p_i and q_i at each (M, N) under slight overload."""
    run_profile(with_run_length(model, duration, warmup), out_dir, M, N, seeds, overload, refine, tier, workers=workers, scheduler=scheduler)


def run_profile(model, out_dir, M, N, seeds, overload, refine, tier, **where) -> None:
    """`where`: workers/scheduler for the simulator, or runner/bound for a live system."""
    from ..experiments.sizing import profile_grid
    from ..experiments.sizing.caveats import never_overloaded

    folder = Path(out_dir)  # written as each point is measured
    grid = profile_grid(model, ints(M), ints(N), overload=overload, refine=refine, seeds=ints(seeds), tier=tier, out_dir=folder, **where)
    low = never_overloaded(grid.runs)
    if low:
        err.print(
            f"[yellow]warning:[/] {len(low)} configurations never reached overload: {', '.join(f'M={m} N={n}' for m, n in low)}; "
            f"their p_i, q_i are below saturation and `size optimize` will say so (see {folder / 'runs.csv'})"
        )
    out.print(f"profiled {grid.points[['M', 'N']].drop_duplicates().shape[0]} points; L = {grid.L:.2f}; written to [bold]{folder}[/]")


@size.command("optimize")
@click.argument("source", type=click.Path(exists=True))
@click.option(
    "--method",
    type=click.Choice(["paper", "twin"]),
    default="paper",
    show_default=True,
    help="paper: interpolate the profile in SOURCE (a `size profile` folder); twin: simulate the model in SOURCE (a calibrated twin) at every --threads × --connections and measure each one's maximum sustainable throughput.",
)
@click.option("--trace", "trace_dir", type=click.Path(file_okay=False), help="paper: take the request mix V_i from this trace (default: the profiling mix).")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), help="A target session arrival rate: report the servers it needs.")
@click.option("--max-threads", type=click.IntRange(min=1), help="paper: evaluate M up to this (default: the profiled range).")
@click.option("--max-connections", type=click.IntRange(min=1), help="paper: evaluate N up to this.")
@click.option("--threads", "M", default="5,10,15,20,30,50", show_default=True, help="twin: thread pool sizes M to try.")
@click.option("--connections", "N", default="1,2,4,5,10,15,20,30,40", show_default=True, help="twin: connection pool sizes N (points with M ≥ N).")
@click.option("--start", type=click.FloatRange(min=0, min_open=True), help="twin: first rate to try, sessions/s (default: the model's CPU bound).")
@click.option("--step", type=click.FloatRange(min=0, min_open=True), default=0.05, show_default=True, help="twin: rate grid, sessions/s.")
@click.option("--runs", type=click.IntRange(min=1), default=5, show_default=True, help="twin: runs per rate; a rate passes if ≥ 60% serve every request.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Write the rates (CSV), result.json (and, paper, a plot) here.")
@MACHINE_OUTPUT
@SIMULATED
def size_optimize(
    source, method, trace_dir, rate, max_threads, max_connections, M, N, start, step, runs, out_dir, json_out, csv_out, workers, scheduler, duration, warmup
) -> None:
    """The optimal (M, N) and its maximum sustainable session throughput: by the paper's
    method from a profile (λ(M, N), λ(N); the CSV: λ(N)), or by simulating a calibrated
    twin under the sustainability rule (the CSV: λ_max per configuration)."""
    if method == "twin":
        if trace_dir or max_threads or max_connections:
            raise InputError("--trace, --max-threads and --max-connections belong to --method paper; with --method twin give --threads and --connections")
        _optimize_twin(
            with_run_length(source, duration, warmup), M, N, start, step, runs, rate, out_dir, json_out, csv_out, workers=workers, scheduler=scheduler
        )
    else:
        _optimize_paper(source, trace_dir, rate, max_threads, max_connections, out_dir, json_out, csv_out)


def _optimize_paper(profile_dir, trace_dir, rate, max_threads, max_connections, out_dir, json_out, csv_out) -> None:
    from ..analysis.profile import request_profile
    from ..experiments.sizing import PoolSizing, ProfileGrid
    from ..experiments.sizing.caveats import optimum_caveats
    from ..report.plots import rates_plot
    from ..report.summary import frame_table
    from ..trace import read_trace

    with about(profile_dir):
        sizing = PoolSizing(ProfileGrid.read(profile_dir))
    V = None
    if trace_dir:
        with about(trace_dir):
            V = request_profile(read_trace(trace_dir)).V
    rates = sizing.rates(V, max_threads, max_connections)
    best = rates.best()
    by_n = rates.by_N()
    people = for_people(json_out, csv_out)
    caveats = optimum_caveats(sizing.grid, int(best["M"]), int(best["N"]))
    result = {
        "method": "paper",
        "optimum": {"M": int(best["M"]), "N": int(best["N"]), "lambda": float(best["lambda"])},
        "mix_distance": rates.distance,
        "warnings": [c.as_json() for c in caveats],
    }
    if rate is not None:
        result["servers"] = {"rate": rate, "servers": rates.servers_for(rate)}
    if people:
        out.print(frame_table("λ(N): best M per N (sessions/s)", by_n))
        out.print(
            f"optimum: M = [bold]{int(best['M'])}[/], N = [bold]{int(best['N'])}[/], λ = [bold]{best['lambda']:.3f}[/] sessions/s "
            f"(mix distance {rates.distance:.3f})"
        )
        _servers(rate, float(best["lambda"]))
    for c in caveats:
        err.print(f"[yellow]warning:[/] {c.message}")
    for_machines(json_out, csv_out, lambda: result, lambda: by_n)
    if out_dir:
        folder = _folder(out_dir)
        rates.table.to_csv(folder / "rates.csv", index=False)
        by_n.to_csv(folder / "lambda_of_N.csv", index=False)
        rates_plot(rates, folder / "lambda.png")
        write_json(str(folder / "result.json"), result)
        err.print(f"written to [bold]{folder}[/]")


def _optimize_twin(model, M, N, start, step, runs, rate, out_dir, json_out, csv_out, **where) -> None:
    from ..experiments.sizing import servers_needed, sizing_by_simulation
    from ..report.summary import frame_table

    table, trials, best = sizing_by_simulation(model, ints(M), ints(N), start=start, step=step, runs=runs, **where)
    lam = float(best["lambda_max"])
    result = {
        "method": "twin",
        "optimum": {"M": int(best["M"]), "N": int(best["N"]), "lambda": lam},
        "configurations": table.to_dict(orient="records"),
    }
    if rate is not None:
        result["servers"] = {"rate": rate, "servers": servers_needed(rate, lam)}
    for r in table[~table["bracketed"]].itertuples():
        err.print(f"[yellow]warning:[/] the search of M={r.M}, N={r.N} ran out of rounds: λ_max is at least {r.lambda_max:g} sessions/s, not exactly that")
    if for_people(json_out, csv_out):
        out.print(frame_table("maximum sustainable session throughput, simulated", table))
        out.print(f"optimum: M = [bold]{int(best['M'])}[/], N = [bold]{int(best['N'])}[/], λ_max = [bold]{lam:g}[/] sessions/s")
        _servers(rate, lam)
    for_machines(json_out, csv_out, lambda: result, lambda: table)
    if out_dir:
        folder = _folder(out_dir)
        table.to_csv(folder / "capacities.csv", index=False)
        trials.to_csv(folder / "trials.csv", index=False)
        write_json(str(folder / "result.json"), result)
        err.print(f"written to [bold]{folder}[/]")


def _servers(rate: float | None, lam: float) -> None:
    from ..experiments.sizing import servers_needed

    if rate is not None:
        out.print(f"{rate:g} sessions/s need [bold]{servers_needed(rate, lam)}[/] servers")


def _folder(out_dir: str) -> Path:
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@size.command("validate")
@VALIDATE_OPTIONS
@SIMULATED
def size_validate(model, configs, start, step, runs, tier, json_out, csv_out, workers, scheduler, duration, warmup) -> None:
    """Measure the maximum sustainable session throughput of (M, N) configurations."""
    run_validate(with_run_length(model, duration, warmup), configs, start, step, runs, tier, json_out, csv_out, workers=workers, scheduler=scheduler)


def run_validate(model, configs, start, step, runs, tier, json_out, csv_out, **where) -> None:
    from ..experiments.sizing import max_sustainable_rate
    from ..report.summary import frame_table

    parsed = [ints(c) for c in configs]
    if any(len(p) != 2 for p in parsed):
        raise InputError("--config takes M,N (two whole numbers)")
    pairs = [(M, N) for M, N in parsed]
    result, trials = max_sustainable_rate(model, pairs, start, step=step, runs=runs, tier=tier, **where)
    for r in result[~result["bracketed"]].itertuples():
        err.print(
            f"[yellow]warning:[/] the search of M={r.M}, N={r.N} ran out of rounds before it closed in: λ_max is at least {r.lambda_max:g} sessions/s, not exactly that"
        )
    if for_people(json_out, csv_out):
        out.print(frame_table("maximum sustainable session throughput", result))
    for_machines(json_out, csv_out, lambda: {"result": result.to_dict(orient="records"), "trials": trials.to_dict(orient="records")}, lambda: result)


@click.group("cost", cls=WholeHelp)
def cost() -> None:
    """The contention cost model C = a·x + b·x/y + c·y (Chen & Gorton)."""


@cost.command("fit")
@click.argument("table", type=click.Path(dir_okay=False))
@click.option("--plot", type=click.Path(dir_okay=False), help="Write measured vs model to this PNG.")
@MACHINE_OUTPUT
def cost_fit(table, plot, json_out, csv_out) -> None:
    """Fit a CSV with columns clients,threads,value; report a, b, c, R² and y*(x) (the
    CSV: y*(x))."""
    import pandas as pd

    from ..analysis.costfit import fit, read_table
    from ..report.plots import cost_fit_plot
    from ..report.summary import frame_table

    with about(table):
        m = fit(read_table(table))
    d = m.to_dict()
    optimal = pd.DataFrame({"clients": [int(x) for x in d["optimal_threads"]], "threads": list(d["optimal_threads"].values())})
    if for_people(json_out, csv_out):
        out.print(
            f"a = {m.a:.4g} ± {m.stderr['a']:.2g}, b = {m.b:.4g} ± {m.stderr['b']:.2g}, c = {m.c:.4g} ± {m.stderr['c']:.2g}; R² = {m.r2:.4f} over {m.n} points"
        )
        out.print(frame_table("optimal threads y* = √(b·x/c)", optimal.rename(columns={"clients": "clients x", "threads": "y*"})))
    if plot:
        cost_fit_plot(m, plot)
    for_machines(json_out, csv_out, lambda: d, lambda: optimal)


@cost.command("simulate")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--clients", required=True, help="Client counts x, comma-separated.")
@click.option("--threads", required=True, help="Thread pool sizes y, comma-separated.")
@click.option("--pool", help="TIER.POOL of the thread pool, if the model has several.")
@click.option("--out", "out_csv", required=True, type=click.Path(dir_okay=False), help="Write the table (clients,threads,value) here.")
@SIMULATED
def cost_simulate(model, clients, threads, pool, out_csv, workers, scheduler, duration, warmup) -> None:
    """Build the measurement table by simulation (mean response time, closed model)."""
    from ..experiments.costtable import simulate_table

    table = simulate_table(with_run_length(model, duration, warmup), ints(clients), ints(threads), pool=pool, workers=workers, scheduler=scheduler)
    table.to_csv(out_csv, index=False)
    out.print(f"{len(table)} points written to [bold]{out_csv}[/]")
