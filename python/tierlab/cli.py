"""`tierlab` command line."""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from .errors import InputError, ModelError, TraceError
from .model import ModelWarning, json_schema, load_model
from .sim import SimulationInterrupted, simulate
from .trace import Trace

err = Console(stderr=True)
out = Console()


@click.group()
@click.version_option(package_name="tierlab")
def cli() -> None:
    """Find and fix the soft-resource bottlenecks of multi-tier web applications."""


@cli.command("simulate")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Folder for the trace.")
@click.option("--seed", type=int, help="Override run.seed.")
@click.option("--duration", type=float, help="Override run.duration (seconds).")
@click.option("--warmup", type=float, help="Override run.warmup (seconds).")
@click.option("--records/--no-records", default=None, help="Keep per-request records (default: the model's run.records).")
@click.option("--quiet", is_flag=True, help="No progress bar or tables.")
def simulate_cmd(model: str, out_dir: str, seed, duration, warmup, records, quiet: bool) -> None:
    """Simulate MODEL (YAML) and write requests.parquet, timeseries.parquet and summary.json to --out."""
    loaded = load_model(model)
    from .cli_live import live_progress

    with live_progress("simulating", quiet, counts=False) as bar:
        task = bar.add_task(loaded.spec.name, total=1.0)
        try:
            trace = simulate(loaded, seed=seed, duration=duration, warmup=warmup, records=records, progress=lambda f: bar.update(task, completed=f))
            stopped = False
        except SimulationInterrupted as e:
            trace, stopped = e.result, True
    folder = trace.write(out_dir)
    if not quiet:
        print_summary(trace)
    if stopped:
        err.print(f"[yellow]interrupted[/] at t = {trace.summary['simulated_until']:.1f} s; wrote what was measured to {folder}")
        sys.exit(130)
    err.print(f"trace written to [bold]{folder}[/]")


@cli.command("schema")
def schema_cmd() -> None:
    """Print the model file's JSON Schema (for editor completion and validation)."""
    click.echo(json.dumps(json_schema(), indent=2))


@cli.command("ramp")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--loads", help="Clients (closed) or sessions/s (open) per step, comma-separated. "
              "Default: 20 steps up to the first doubling from --start at which the p90 has grown tenfold.")
@click.option("--start", type=float, default=1.0, show_default=True, help="The first load when --loads is not given.")
@click.option("--seeds", default="1", show_default=True, help="Seeds per step (averaged).")
@click.option("--workers", type=int, help="Local worker processes (default: one per core).")
@click.option("--scheduler", help="Run on this Dask scheduler instead.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Write ramp.csv, result.json and ramp.png here.")
def ramp_cmd(model, loads, start, seeds, workers, scheduler, out_dir) -> None:
    """Black-box capacity: a load ramp and the knee of its p90 response time."""
    from dataclasses import asdict

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .ramp import ramp, retransmission_threshold

    steps = [float(x) for x in loads.split(",") if x.strip()] if loads else None
    table, knee = ramp(model, steps, seeds=[int(s) for s in seeds.split(",")], workers=workers, scheduler=scheduler, start=start)
    out.print(table.to_string(index=False), markup=False, soft_wrap=True)
    if knee.load is None:
        out.print("no knee: the p90 curve does not turn from flat to steep over these loads; "
                  "extend them (or leave --loads out to search for the range)", style="yellow")
    else:
        out.print(f"knee (capacity): load = {knee.load:g}, p90 = {knee.value:.4g} s  [{knee.method}]", markup=False)
    threshold = retransmission_threshold(table)
    if threshold is not None:
        out.print(f"more than 1% of requests retransmitted from load {threshold:g} on")
    if out_dir:
        folder = Path(out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        table.to_csv(folder / "ramp.csv", index=False)
        (folder / "result.json").write_text(json.dumps({"knee": asdict(knee), "retransmission_threshold": threshold, "steps": table.to_dict(orient="records")}, indent=2) + "\n")
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(table.load, table.p90, "o-")
        if knee.load is not None:
            ax.axvline(knee.load, ls="--", color="grey", label=f"knee {knee.load:g}")
            ax.legend()
        ax.set_xlabel("load")
        ax.set_ylabel("p90 response time (s)")
        fig.tight_layout()
        fig.savefig(folder / "ramp.png", dpi=110)


@cli.group("analyze")
def analyze() -> None:
    """Analyses of a trace (simulated or live)."""


@analyze.command("bottleneck")
@click.argument("trace_dir", type=click.Path(file_okay=False))
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="Also write the result as JSON here.")
def analyze_bottleneck(trace_dir, json_out) -> None:
    """White-box: every resource's utilization or occupancy, and the bottleneck."""
    from dataclasses import asdict

    from .bottleneck import bottleneck, breakdown, resources
    from .trace import read_trace

    trace = read_trace(trace_dir)
    table, b, times = resources(trace), bottleneck(trace), breakdown(trace)
    out.print(table.round(3).to_string(index=False), markup=False, soft_wrap=True)
    if not times.empty:
        out.print("\nmean seconds per tier (ok requests; a tier's time includes the tiers it called)")
        out.print(times.round(4).to_string(index=False), markup=False, soft_wrap=True)
    if b is not None:
        state = "bottleneck" if b.saturated else "nothing saturated; closest to it"
        out.print(f"\n{state}: {b.tier}[{b.server}].{b.resource} ({b.kind}, {b.family}), level {b.level:.2f}, pinned {b.pinned:.0%}", markup=False)
    if json_out:
        Path(json_out).write_text(json.dumps({"bottleneck": asdict(b) if b else None, "resources": table.to_dict(orient="records"),
                                              "breakdown": times.to_dict(orient="records")}, indent=2) + "\n")


@analyze.command("fluctuations")
@click.argument("trace_dir", type=click.Path(file_okay=False))
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="Also write the result as JSON here.")
@click.option("--plot", type=click.Path(dir_okay=False), help="Write request rate and response time per tier at 100 ms and 10 s here (PNG).")
def analyze_fluctuations(trace_dir, json_out, plot) -> None:
    """Fine-grained: rate and response-time fluctuation per tier, bimodality, p95/p98, retransmissions."""
    from .fluctuations import fluctuations, rate, residence
    from .trace import read_trace

    trace = read_trace(trace_dir)
    f = fluctuations(trace)
    import pandas as pd

    out.print(pd.DataFrame(f["tiers"]).round(3).to_string(index=False), markup=False, soft_wrap=True)
    out.print(f"\nmean {f['mean']:.4f} s, p95 {f['p95']:.4f} s, p98 {f['p98']:.4f} s", markup=False)
    if "bimodality" in f:
        b = f["bimodality"]
        modes = ", ".join(f"{m:.4f} s" for m in b["modes"]) or "-"
        out.print(f"bimodal: {b['bimodal']} (dip {b['dip']:.4f}, p = {b['p_value']:.3g}); modes: {modes}", markup=False)
        out.print(f"retransmissions per minute: mean {f['retransmissions_per_minute']['mean']:.1f}, max "
                  f"{f['retransmissions_per_minute']['max']:.0f}; requests retransmitted: {f['share_retransmitted']:.2%}", markup=False)
    if json_out:
        Path(json_out).write_text(json.dumps(f, indent=2) + "\n")
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = [t["tier"] for t in f["tiers"]]
        fig, axes = plt.subplots(2, 2, figsize=(12, 6), sharex=True)
        for j, every in enumerate((0.1, 10.0)):
            for name in names:
                axes[0][j].plot(rate(trace, name, every), label=name, lw=0.6)
                axes[1][j].plot(residence(trace, name, every), label=name, lw=0.6)
            axes[0][j].set_title(f"{every:g} s windows")
            axes[0][j].set_ylabel("requests/s")
            axes[1][j].set_ylabel("mean residence (s)")
            axes[1][j].set_xlabel("time (s)")
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(plot, dpi=110)


def _register() -> None:
    from .cli_live import live, load_cmd
    from .cli_sizing import cost, profile_cmd, size

    for command in (profile_cmd, size, cost, load_cmd, live):
        cli.add_command(command)


_register()


def _ms(x) -> str:
    return "—" if x is None else f"{1000 * x:.1f}"


def print_summary(trace: Trace) -> None:
    s = trace.summary
    req = s["requests"]
    rt = s["response_time"] or {}
    out.print(
        f"[bold]{s['model']}[/]: {s['measured_seconds']:.0f} s measured, throughput [bold]{s['throughput']:.2f}[/] req/s, "
        f"sessions {s['sessions']['throughput']:.3f}/s, ok {req['ok']}, rejected {req['rejected']}, "
        f"timeout {req['timeout']}, error {req['error']}, in flight at end {s['in_flight_at_end']}"
    )
    t = Table(title="response time (ms)", title_justify="left")
    for c in ["type", "ok", "rejected", "req/s", "mean", "p50", "p90", "p95", "p99", "p99.9"]:
        t.add_column(c, justify="left" if c == "type" else "right")
    rows = [("all", req, s["throughput"], rt)] + [(n, v["requests"], v["throughput"], v["response_time"] or {}) for n, v in s["types"].items()]
    for name, r, x, q in rows:
        t.add_row(name, str(r["ok"]), str(r["rejected"]), f"{x:.2f}", *(_ms(q.get(k)) for k in ["mean", "p50", "p90", "p95", "p99", "p99.9"]))
    out.print(t)
    u = Table(title="resources (measured period)", title_justify="left")
    for c in ["tier", "server", "resource", "utilization / mean busy", "mean queued", "rejected"]:
        u.add_column(c)
    for tier, tv in s["tiers"].items():
        for i, sv in enumerate(tv["servers"]):
            for name, st in sv["stations"].items():
                u.add_row(tier, str(i), name, f"{st['utilization']:.1%}", "", "")
            for name, p in sv["pools"].items():
                u.add_row(tier, str(i), name, f"{p['mean_busy']:.2f} / {p['size']}", f"{p['mean_queued']:.2f}", str(p["rejected"]))
    out.print(u)


def main() -> None:
    """Entry point: user errors are one clear message, never a traceback."""
    debug = bool(os.environ.get("TIERLAB_DEBUG"))

    def show_warning(message, category, filename, lineno, file=None, line=None):
        err.print(f"[yellow]warning:[/] {message}")

    warnings.showwarning = show_warning
    warnings.simplefilter("always", ModelWarning)
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        err.print("aborted")
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except (ModelError, TraceError, InputError) as e:
        err.print(f"error: {e}", style="red", markup=False, highlight=False)
        sys.exit(2)
    except Exception as e:  # noqa: BLE001 — the last line of defence for a clear message
        if debug:
            raise
        err.print(f"error: {type(e).__name__}: {e}", style="red", markup=False, highlight=False)
        err.print("(set TIERLAB_DEBUG=1 for the traceback)", style="dim")
        sys.exit(1)


if __name__ == "__main__":
    main()
