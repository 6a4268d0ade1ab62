"""`tierlab profile`, `tierlab size …` and `tierlab cost …`: request profiles, pool
sizing (Totok & Karamcheti) and the contention cost model (Chen & Gorton)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from .errors import InputError

# Wide tables stay readable when piped (rich would squeeze them to 80 columns).
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True)


def _ints(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated whole numbers, got {text!r}") from None


def _table(title: str, df, floats: str = "{:.3g}") -> Table:
    t = Table(title=title, title_justify="left")
    for c in df.columns:
        t.add_column(str(c), justify="right")
    for row in df.itertuples(index=False):
        t.add_row(*(floats.format(v) if isinstance(v, float) else str(v) for v in row))
    return t


def _write_json(path: str | None, data: dict) -> None:
    text = json.dumps(data, indent=2, sort_keys=True, default=float)
    if path:
        Path(path).write_text(text + "\n")
    else:
        click.echo(text)


@click.command("profile")
@click.argument("trace_dir", type=click.Path(file_okay=False))
@click.option("--tier", help="The tier to profile (default: the one that takes DB connections).")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="Also write the profile as JSON here.")
def profile_cmd(trace_dir: str, tier, json_out) -> None:
    """Request profile of a trace: V_i, L and per-type phases (w_THR, p, w_DB, q active/idle)."""
    from .profile import profile
    from .trace import read_trace

    p = profile(read_trace(trace_dir), tier)
    out.print(f"tier [bold]{p.tier}[/]: L = {p.L:.2f} requests/session over {p.sessions} sessions; times in seconds")
    out.print(_table("request profile", p.table().reset_index()))
    if json_out:
        _write_json(json_out, {"tier": p.tier, "L": p.L, "sessions": p.sessions, "types": p.table().to_dict(orient="index")})


@click.group("size")
def size() -> None:
    """Size thread and connection pools (Totok & Karamcheti)."""


def _options(*options):
    """Apply click options in the order listed (shared by simulated and live commands)."""
    def apply(f):
        for o in reversed(options):
            f = o(f)
        return f
    return apply


PROFILE_OPTIONS = _options(
    click.argument("model", type=click.Path(dir_okay=False)),
    click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder for the profile."),
    click.option("--threads", "M", default="5,10,15,20,30,50", show_default=True, help="Thread pool sizes M to profile."),
    click.option("--connections", "N", default="1,2,4,5,10,15,20,30,40", show_default=True, help="Connection pool sizes N (points with M ≥ N are run)."),
    click.option("--seeds", default="1", show_default=True, help="Seeds per point (results are pooled)."),
    click.option("--overload", default=0.1, show_default=True, help="Offer (1 + overload) × the measured capacity."),
    click.option("--tier", help="The tier whose pools are sized (default: the one with a threads and a connections pool)."),
)
VALIDATE_OPTIONS = _options(
    click.argument("model", type=click.Path(dir_okay=False)),
    click.option("--config", "configs", multiple=True, required=True, help="M,N to measure (repeatable)."),
    click.option("--start", type=float, required=True, help="First rate to try (e.g. the predicted λ), sessions/s."),
    click.option("--step", default=0.05, show_default=True, help="Rate grid, sessions/s."),
    click.option("--runs", default=5, show_default=True, help="Runs per rate; a rate passes if ≥ 60% serve every request."),
    click.option("--tier", help="The tier whose pools are sized."),
    click.option("--json", "json_out", type=click.Path(dir_okay=False)),
)
SIMULATED = _options(
    click.option("--workers", type=int, help="Local worker processes (default: one per core)."),
    click.option("--scheduler", help="Run on this Dask scheduler (tcp://host:8786) instead."),
)


@size.command("profile")
@PROFILE_OPTIONS
@SIMULATED
def size_profile(model, out_dir, M, N, seeds, overload, tier, workers, scheduler) -> None:
    """Profiling tests: p_i and q_i at each (M, N) under slight overload."""
    run_profile(model, out_dir, M, N, seeds, overload, tier, workers=workers, scheduler=scheduler)


def run_profile(model, out_dir, M, N, seeds, overload, tier, **where) -> None:
    """`where`: workers/scheduler for the simulator, or runner/bound for a live system."""
    from .sizing import profile_grid

    grid = profile_grid(model, _ints(M), _ints(N), overload=overload, seeds=_ints(seeds), tier=tier, **where)
    folder = grid.write(out_dir)
    late = grid.runs[~grid.runs["overloaded"]]
    if len(late):
        err.print(f"[yellow]warning:[/] {len(late)} runs never reached overload; see {folder / 'runs.csv'}")
    out.print(f"profiled {grid.points[['M', 'N']].drop_duplicates().shape[0]} points; L = {grid.L:.2f}; written to [bold]{folder}[/]")


@size.command("optimize")
@click.argument("profile_dir", type=click.Path(file_okay=False))
@click.option("--trace", "trace_dir", type=click.Path(file_okay=False), help="Take the request mix V_i from this trace (default: the profiling mix).")
@click.option("--rate", type=float, help="A target session arrival rate: report the servers it needs.")
@click.option("--max-threads", type=int, help="Evaluate M up to this (default: the profiled range).")
@click.option("--max-connections", type=int, help="Evaluate N up to this.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Write rates.csv, lambda_of_N.csv, result.json and a plot here.")
def size_optimize(profile_dir, trace_dir, rate, max_threads, max_connections, out_dir) -> None:
    """λ(M, N), λ(N) and the optimal (M, N) for a request mix."""
    from .profile import profile
    from .sizing import PoolSizing, ProfileGrid
    from .trace import read_trace

    sizing = PoolSizing(ProfileGrid.read(profile_dir))
    V = None
    if trace_dir:
        p = profile(read_trace(trace_dir))
        V = p.V
    rates = sizing.rates(V, max_threads, max_connections)
    best = rates.best()
    by_n = rates.by_N()
    out.print(_table("λ(N): best M per N (sessions/s)", by_n))
    result = {"optimum": {"M": int(best["M"]), "N": int(best["N"]), "lambda": float(best["lambda"])}, "mix_distance": rates.distance}
    out.print(f"optimum: M = [bold]{int(best['M'])}[/], N = [bold]{int(best['N'])}[/], λ = [bold]{best['lambda']:.3f}[/] sessions/s (mix distance {rates.distance:.3f})")
    if rate is not None:
        result["servers"] = {"rate": rate, "servers": rates.servers_for(rate)}
        out.print(f"{rate:g} sessions/s need [bold]{rates.servers_for(rate)}[/] servers")
    if out_dir:
        folder = Path(out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        rates.table.to_csv(folder / "rates.csv", index=False)
        by_n.to_csv(folder / "lambda_of_N.csv", index=False)
        _plot_rates(rates, folder / "lambda.png")
        _write_json(str(folder / "result.json"), result)
        out.print(f"written to [bold]{folder}[/]")


def _plot_rates(rates, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = rates.table
    fig, ax = plt.subplots(figsize=(6, 4))
    for M in sorted(t.M.unique())[:: max(1, len(t.M.unique()) // 8)]:
        d = t[t.M == M].sort_values("N")
        ax.plot(d.N, d["lambda"], lw=0.8, label=f"M={M}")
    by_n = rates.by_N()
    ax.plot(by_n.N, by_n["lambda"], "k-", lw=2, label="λ(N)")
    ax.set_xlabel("DB connections N")
    ax.set_ylabel("max sustainable sessions/s")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


@size.command("validate")
@VALIDATE_OPTIONS
@SIMULATED
def size_validate(model, configs, start, step, runs, tier, json_out, workers, scheduler) -> None:
    """Measure the maximum sustainable session throughput of (M, N) configurations."""
    run_validate(model, configs, start, step, runs, tier, json_out, workers=workers, scheduler=scheduler)


def run_validate(model, configs, start, step, runs, tier, json_out, **where) -> None:
    from .sizing import max_sustainable_rate

    pairs = [tuple(_ints(c)) for c in configs]
    if any(len(p) != 2 for p in pairs):
        raise InputError("--config takes M,N (two whole numbers)")
    result, trials = max_sustainable_rate(model, pairs, start, step=step, runs=runs, tier=tier, **where)
    out.print(_table("maximum sustainable session throughput", result))
    if json_out:
        _write_json(json_out, {"result": result.to_dict(orient="records"), "trials": trials.to_dict(orient="records")})


@click.group("cost")
def cost() -> None:
    """The contention cost model C = a·x + b·x/y + c·y (Chen & Gorton)."""


@cost.command("fit")
@click.argument("table", type=click.Path(dir_okay=False))
@click.option("--plot", type=click.Path(dir_okay=False), help="Write measured vs model to this PNG.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False))
def cost_fit(table, plot, json_out) -> None:
    """Fit a CSV with columns clients,threads,value; report a, b, c, R² and y*(x)."""
    from . import costmodel

    m = costmodel.fit(costmodel.read_table(table))
    d = m.to_dict()
    out.print(
        f"a = {m.a:.4g} ± {m.stderr['a']:.2g}, b = {m.b:.4g} ± {m.stderr['b']:.2g}, c = {m.c:.4g} ± {m.stderr['c']:.2g}; "
        f"R² = {m.r2:.4f} over {m.n} points"
    )
    t = Table(title="optimal threads y* = √(b·x/c)", title_justify="left")
    t.add_column("clients x", justify="right")
    t.add_column("y*", justify="right")
    for x, y in d["optimal_threads"].items():
        t.add_row(x, str(y))
    out.print(t)
    if plot:
        m.plot(plot)
    if json_out:
        _write_json(json_out, d)


@cost.command("simulate")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--clients", required=True, help="Client counts x, comma-separated.")
@click.option("--threads", required=True, help="Thread pool sizes y, comma-separated.")
@click.option("--pool", help="TIER.POOL of the thread pool, if the model has several.")
@click.option("--out", "out_csv", required=True, type=click.Path(dir_okay=False), help="Write the table (clients,threads,value) here.")
@click.option("--workers", type=int)
@click.option("--scheduler")
def cost_simulate(model, clients, threads, pool, out_csv, workers, scheduler) -> None:
    """Build the measurement table by simulation (mean response time, closed model)."""
    from . import costmodel

    table = costmodel.simulate_table(model, _ints(clients), _ints(threads), pool=pool, workers=workers, scheduler=scheduler)
    table.to_csv(out_csv, index=False)
    out.print(f"{len(table)} points written to [bold]{out_csv}[/]")
