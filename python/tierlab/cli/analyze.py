"""`tierlab analyze …`: analyses of one trace, simulated or live."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import click

from . import WholeHelp
from .common import MACHINE_OUTPUT, about, floats, for_machines, for_people, out


@click.group("analyze", cls=WholeHelp)
def analyze() -> None:
    """Analyses of a trace (simulated or live)."""


@analyze.command("profile")
@click.argument("trace_dir", type=click.Path(file_okay=False))
@click.option("--tier", help="The tier to profile (default: the one that takes DB connections).")
@MACHINE_OUTPUT
def analyze_profile(trace_dir: str, tier, json_out, csv_out) -> None:
    """Request profile (Totok & Karamcheti): V_i, L and per-type phases (w_THR, p, w_DB, q active/idle)."""
    from ..analysis.profile import request_profile
    from ..report.summary import frame_table
    from ..trace import read_trace

    with about(trace_dir):
        trace = read_trace(trace_dir)
        p = request_profile(trace, tier, without_sessions=True)
    if for_people(json_out, csv_out):
        if p.sessions:
            out.print(f"tier [bold]{p.tier}[/]: L = {p.L:.2f} requests/session over {p.sessions} sessions; times in seconds")
        else:
            out.print(f"tier {p.tier}: L and V unknown ({trace.summary['missing']['sessions']}); times in seconds", markup=False)
        out.print(frame_table("request profile", p.table().reset_index()))
    for_machines(
        json_out,
        csv_out,
        lambda: {"tier": p.tier, "L": p.L, "sessions": p.sessions, "types": p.table().to_dict(orient="index")},
        lambda: p.table().reset_index(),
    )


@analyze.command("bottleneck")
@click.argument("trace_dir", type=click.Path(file_okay=False))
@MACHINE_OUTPUT
def analyze_bottleneck(trace_dir, json_out, csv_out) -> None:
    """White-box: every resource's utilization or occupancy, and the bottleneck (the
    CSV: the resources)."""
    from ..analysis.bottleneck import bottleneck, breakdown, resources
    from ..report.summary import frame_table
    from ..trace import read_trace

    with about(trace_dir):
        trace = read_trace(trace_dir)
        table, b, times = resources(trace), bottleneck(trace), breakdown(trace)
    if for_people(json_out, csv_out):
        if table.empty:
            out.print("the trace reports no stations or pools (a client-only trace measures none): no resource to rank", style="yellow")
        else:
            shares = table.drop(columns=["depth"]).assign(level=100 * table.level, pinned=100 * table.pinned)
            out.print(frame_table("resources", shares.rename(columns={"level": "level (%)", "pinned": "pinned (% of windows)"})))
        if not times.empty:
            ms = times.assign(**{c: 1000 * times[c] for c in times.columns if c != "tier"})
            out.print(frame_table("mean ms per ok request and tier (a tier's time includes the tiers it called)", ms))
        if b is not None:
            state = "bottleneck" if b.saturated else "nothing saturated; closest to it"
            out.print(
                f"\n{state}: {b.tier}[{b.server}].{b.resource} ({b.kind}, {b.family}), level {b.level:.0%}, pinned in {b.pinned:.0%} of the windows",
                markup=False,
            )
    for_machines(
        json_out,
        csv_out,
        lambda: {"bottleneck": asdict(b) if b else None, "resources": table.to_dict(orient="records"), "breakdown": times.to_dict(orient="records")},
        lambda: table,
    )


@analyze.command("fluctuations")
@click.argument("trace_dir", type=click.Path(file_okay=False))
@MACHINE_OUTPUT
@click.option("--plot", type=click.Path(dir_okay=False), help="Write request rate and response time per tier at 100 ms and 10 s here (PNG).")
def analyze_fluctuations(trace_dir, json_out, csv_out, plot) -> None:
    """Fine-grained: rate and response-time fluctuation per tier, bimodality, p95/p98,
    retransmissions (the CSV: the per-tier table)."""
    import pandas as pd

    from ..analysis.fluctuations import fluctuations
    from ..report.plots import fluctuations_plot
    from ..trace import read_trace

    with about(trace_dir):
        trace = read_trace(trace_dir)
        f = fluctuations(trace)
    if for_people(json_out, csv_out):
        _print_fluctuations(f)
    for_machines(json_out, csv_out, lambda: f, lambda: pd.DataFrame(f["tiers"]))
    if plot:
        fluctuations_plot(trace, [t["tier"] for t in f["tiers"]], plot)


def _print_fluctuations(f: dict) -> None:
    import pandas as pd

    from ..report.numbers import duration, figure
    from ..report.summary import frame_table

    if f["tiers"]:
        out.print(frame_table("per tier", pd.DataFrame(f["tiers"])))
    else:
        out.print("no tiers in this trace (a client-only trace, e.g. from `tierlab load`): no per-tier rates; the client's figures follow", style="yellow")
    if f["mean"] is not None:
        out.print(f"\nmean {duration(f['mean'])}, p95 {duration(f['p95'])}, p98 {duration(f['p98'])}", markup=False)
    if "bimodality" in f:
        b = f["bimodality"]
        modes = ", ".join(duration(m) for m in b["modes"]) or "-"
        out.print(f"bimodal: {figure(b['bimodal'])} (dip {figure(b['dip'])}, p = {figure(b['p_value'])}); modes: {modes}", markup=False)
        per_minute = f["retransmissions_per_minute"]
        out.print(
            f"retransmissions not measured: {f['retransmissions_not_measured']}"
            if per_minute is None
            else f"retransmissions per minute: mean {per_minute['mean']:.1f}, max {per_minute['max']:.0f}; requests retransmitted: {f['share_retransmitted']:.2%}",
            markup=False,
        )


@analyze.command("ramp")
@click.argument("trace_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--loads", help="The load of each run, comma-separated in the order given (e.g. k6's VUs). Default: each run's mean requests in flight.")
@MACHINE_OUTPUT
def analyze_ramp(trace_dirs, loads, json_out, csv_out) -> None:
    """The knee of the p90 curve and the USL over runs made elsewhere (imported or
    live), one step per trace (the CSV: one row per run)."""
    from ..experiments.ramp import ramp_of_traces
    from ..trace import read_trace

    traces = []
    for d in trace_dirs:
        with about(d):
            traces.append(read_trace(d))
    table, knee, usl = ramp_of_traces(traces, floats(loads) if loads else None)
    if for_people(json_out, csv_out):
        print_ramp(table, knee, usl, "no knee over these runs")
    for_machines(json_out, csv_out, lambda: {"knee": asdict(knee), "usl": usl and usl.as_json(), "steps": table.to_dict(orient="records")}, lambda: table)


def print_ramp(table: Any, knee: Any, usl: Any, no_knee: str) -> None:
    """A ramp's steps (times in ms, retransmitted as a share), its knee — or `no_knee`
    — and its USL; `tierlab ramp` and `analyze ramp` alike."""
    from ..report.numbers import figure
    from ..report.summary import frame_table
    from .usl import describe

    steps = table.assign(p90=1000 * table["p90"], mean=1000 * table["mean"], retransmitted=100 * table["retransmitted"])
    steps = steps.rename(columns={"throughput": "req/s", "p90": "p90 (ms)", "mean": "mean (ms)", "retransmitted": "retransmitted (%)"})
    saturated = (
        "no step saturated: the throughput still rises at the last"
        if knee.saturation is None
        else f"saturated from load {knee.saturation:g}, the first within 2% of the highest throughput"
    )
    out.print(frame_table(f"ramp ({saturated})", steps))
    if knee.load is None:
        out.print(no_knee, style="yellow", markup=False)
    else:
        out.print(f"knee (capacity): load = {figure(knee.load)}, p90 = {figure(1000 * knee.value)} ms  [{knee.method}]", markup=False)
    if usl is not None:
        out.print(describe(usl), markup=False)
