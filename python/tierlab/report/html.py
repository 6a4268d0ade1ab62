"""`tierlab report`: one self-contained HTML page of one or several runs — simulated,
live or imported — that a browser opens without a network (plotly's JavaScript is
inlined once; figures zoom and pan, which a 100 ms series needs) and that prints.

Each section is there only when the traces hold its data (`Report.sections` lists
the DOM ids). One run: headline, response time over time (100 ms and 10 s), per-type
percentiles, per-tier time breakdown, pools and stations over time, an online
controller's sizes and decisions (docs/control.md), the bottleneck,
fluctuations (bimodality and its modes, retransmissions) and what the trace lacks.
Several runs: side by side with deltas against the first and, from three runs on, a
ramp (knee and USL, `experiments.ramp.ramp_of_traces`); each run's sections follow
under `runK-…` ids. A `size optimize` folder adds the λ(M, N) heat map."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from jinja2 import Environment, PackageLoader, select_autoescape
from plotly.colors import qualitative
from plotly.offline import get_plotlyjs

from ..analysis.bottleneck import GRACEFUL, PINNED, SATURATED, bottleneck, breakdown, resources
from ..analysis.fluctuations import bimodality, retransmissions_per_minute, unmeasured_retransmissions
from ..errors import InputError
from ..experiments.ramp import ramp_of_traces
from ..trace import Trace, window_of
from ..trace.outcome import backlog_note
from ..trace.schema import OUTCOMES, PHASES, figures
from .numbers import duration, figure

FINE, COARSE = 0.1, 10.0
HEADLINE_PERCENTILES = ("p50", "p90", "p99", "p99.9")
ENVELOPE_ABOVE = 600
"""A series of more windows than this is drawn as its mean over buckets of several
windows, over a band from their lowest to their highest: a 100 ms series of a
10-minute run has 6,000 windows, which one line draws as a solid block."""
BUCKETS = 300
COLORS = qualitative.Plotly


@dataclass
class Section:
    id: str
    title: str
    body: str
    """HTML (tables, figures' divs)."""


@dataclass
class Report:
    html: str
    sections: list[str]
    """The DOM ids of the sections present, in page order."""


def report(
    runs: list[tuple[str, Trace]],
    loads: list[float] | None = None,
    sizing: str | Path | None = None,
    title: str | None = None,
    validation: str | Path | None = None,
) -> Report:
    """The page for `runs` (name, trace), in the order given; `sizing` a `size optimize
    --out` folder, `validation` the measured λ_max of `size validate` (its --json or
    --csv) to set against the prediction."""
    if not runs:
        raise InputError("no runs to report on")
    sections: list[Section] = []
    if len(runs) > 1:
        sections.append(_comparison(runs))
        if len(runs) >= 3:
            sections.append(_ramp([t for _, t in runs], loads))
    rates = None
    if sizing is not None:
        section, rates = _sizing(Path(sizing))
        sections.append(section)
    if validation is not None:
        sections.append(_validation(Path(validation), rates))
    for k, (name, trace) in enumerate(runs, 1):
        prefix = "" if len(runs) == 1 else f"run{k}-"
        sections += [Section(prefix + s.id, s.title if len(runs) == 1 else f"{name}: {s.title}", s.body) for s in _run_sections(trace)]
    env = Environment(loader=PackageLoader("tierlab.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    page = env.get_template("report.html.j2").render(
        title=title or (runs[0][0] if len(runs) == 1 else f"{len(runs)} runs"),
        plotly=get_plotlyjs(),
        sections=sections,
        runs=[name for name, _ in runs],
    )
    return Report(page, [s.id for s in sections])


def _run_sections(trace: Trace) -> list[Section]:
    found = [_headline(trace)]
    for make in (_response_time, _types, _breakdown, _pools, _control, _stations, _bottleneck, _fluctuations, _missing):
        s = make(trace)
        if s is not None:
            found.append(s)
    return found


# -- helpers -------------------------------------------------------------------


def _figure(fig: go.Figure, height: int = 320) -> str:
    # The legend above the plot, where plotly makes room for it: below, it shared the
    # margin with the x axis's title and sat on it when the figure was short.
    fig.update_layout(
        height=height,
        margin={"l": 60, "r": 20, "t": 30, "b": 45},
        template="plotly_white",
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"},
    )
    # Tick labels a few pixels off their axes: the two axes' "0" met at the corner.
    fig.update_xaxes(ticks="outside", ticklen=4, tickcolor="rgba(0,0,0,0)")
    fig.update_yaxes(ticks="outside", ticklen=4, tickcolor="rgba(0,0,0,0)")
    return str(fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False, "responsive": True}))


def _table(df: pd.DataFrame) -> str:
    return str(df.to_html(index=False, border=0, classes="figures", na_rep="—", float_format=figure))


def _rgba(color: str, alpha: float) -> str:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def _buckets(s: pd.Series, step: float, every: float, end: float) -> tuple[np.ndarray, np.ndarray]:
    """Each window's `every`-second bucket, and each bucket's place on the time axis:
    the middle of the windows it holds, cut at the end of the run (a last, partial
    bucket drawn at its full bucket's middle stood past the end: a 10 s point at
    t = 25 s for a 20 s run; and a run's clock, summing 0.1 s steps, can open a last
    window a hair before the end, 89.99999999999916 s of 90)."""
    t = s.index.to_numpy(float)
    starts = window_of(t, every)
    spans = pd.DataFrame({"first": t, "last": np.minimum(t + step, end)}).groupby(starts).agg({"first": "min", "last": "max"})
    return starts, ((spans["first"] + spans["last"]) / 2).to_numpy()


def _series(fig: go.Figure, s: pd.Series, step: float, end: float, name: str, color: str, dash: str | None = None, scale: float = 1.0) -> float | None:
    """`s` (values by window start, windows of `step` s, a run ending at `end`) drawn at
    the windows' middles: as a line, or beyond ENVELOPE_ABOVE windows as the mean of
    buckets of several windows over a band from their lowest to their highest (see
    ENVELOPE_ABOVE). Returns the bucket's seconds when enveloped."""
    s = s.dropna() * scale
    if len(s) <= ENVELOPE_ABOVE:
        x = np.minimum(s.index.to_numpy(float) + step / 2, end)
        fig.add_scatter(x=x, y=s.to_numpy(), mode="lines", name=name, line={"width": 1, "color": color, "dash": dash})
        return None
    span = float(s.index.max() - s.index.min()) + step
    bucket = max(step, float(np.ceil(span / BUCKETS / step)) * step)
    starts, x = _buckets(s, step, bucket, end)
    g = s.groupby(starts).agg(["mean", "min", "max"])
    band = {"mode": "lines", "line": {"width": 0}, "legendgroup": name, "showlegend": False, "hoverinfo": "skip"}
    fig.add_scatter(x=x, y=g["max"].to_numpy(), **band)
    fig.add_scatter(x=x, y=g["min"].to_numpy(), fill="tonexty", fillcolor=_rgba(color, 0.25), **band)
    fig.add_scatter(x=x, y=g["mean"].to_numpy(), mode="lines", name=name, legendgroup=name, line={"width": 1.5, "color": color, "dash": dash})
    return bucket


def _envelope_note(bucket: float | None, step: float) -> str:
    if bucket is None:
        return ""
    return f"<p class='note'>Lines: the mean over {figure(bucket)} s; bands: the lowest to the highest of its {figure(step)} s windows.</p>"


def _time_axis(fig: go.Figure, trace: Trace) -> None:
    """Every time axis of a run from 0 to the end of its measured period, the warm-up
    shaded: pools and stations start at 0, response times after the warm-up."""
    warmup = trace.summary["warmup"]
    if warmup > 0:
        fig.add_vrect(x0=0, x1=warmup, fillcolor="grey", opacity=0.12, line_width=0, layer="below")
    fig.update_xaxes(title="time (s)", range=[0, trace.end])


def _ms(x: float | None) -> float | None:
    return None if x is None else x * 1000


# -- one run --------------------------------------------------------------------


def _headline(trace: Trace) -> Section:
    s = trace.summary
    rt = figures(s["response_time"])
    rows = [
        ("model", s["model"]),
        ("source", s["source"]),
        ("measured", f"{figure(s['measured_seconds'])} s (after {figure(s['warmup'])} s warm-up)"),
        ("throughput", f"{figure(s['throughput'])} req/s"),
        *((k, f"{s['requests'][k]:,}") for k in OUTCOMES),
        *((f"{p} response time", f"{figure(rt[p] * 1000)} ms" if p in rt else "—") for p in HEADLINE_PERCENTILES),
    ]
    overloaded = backlog_note(s)
    if overloaded:
        rows.append(("overloaded", overloaded))
    if s["errors"]:
        failed = ", ".join(f"{k} {v:,}" for k, v in s["errors"].items() if v)
        rows.append(("failed by kind", failed or "none"))
    body = "<table class='headline'>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows) + "</table>"
    return Section("headline", "Headline", body)


def _response_times(trace: Trace) -> pd.Series | None:
    """Mean response time per 100 ms window: of the ok requests by their end when
    recorded, else the client's series, else the front tier's residence."""
    r = trace.requests
    if r is not None and len(r):
        ok = r[r.status == "ok"]
        return ok.response_time.groupby(window_of(ok.end.to_numpy(), FINE)).mean()
    tiers = sorted(trace.summary["tiers"].items(), key=lambda kv: kv[1]["position"])
    for tier in ["client"] + [t for t, _ in tiers[:1]]:
        s = trace.series(tier, "response_time")
        if not s.empty:
            return s.mean(axis=1).dropna()
    return None


def _response_time(trace: Trace) -> Section | None:
    fine = _response_times(trace)
    if fine is None or fine.empty:
        return None
    step = trace.summary["window"] if trace.requests is None else FINE
    # Each 10 s mean at the middle of the windows it holds: the series ends where the data do.
    starts, middles = _buckets(fine, step, COARSE, trace.end)
    coarse = fine.groupby(starts).mean()
    fig = go.Figure()
    bucket = _series(fig, fine, step, trace.end, f"{figure(step)} s windows", COLORS[0], scale=1000)
    fig.add_scatter(x=middles, y=coarse.to_numpy() * 1000, mode="lines+markers", name=f"{COARSE:g} s windows", line={"color": COLORS[1]})
    _time_axis(fig, trace)
    fig.update_yaxes(title="mean response time (ms)")
    return Section("response-time", "Response time over time", _figure(fig) + _envelope_note(bucket, step))


def _types(trace: Trace) -> Section | None:
    types = trace.summary["types"]
    if not types:
        return None
    rows = []
    for name, t in types.items():
        rt = figures(t["response_time"])
        counts: dict[str, int] = {k: t["requests"][k] for k in OUTCOMES}
        rows.append(
            {
                "type": name,
                **counts,
                "req/s": t["throughput"],
                **{f"{p} (ms)": _ms(rt.get(p)) for p in ("mean", "p50", "p90", "p99", "p99.9")},
            }
        )
    return Section("types", "Response time per request type", _table(pd.DataFrame(rows)))


def _breakdown(trace: Trace) -> Section | None:
    b = breakdown(trace)
    if b.empty:
        return None
    fig = go.Figure()
    for p in PHASES:
        fig.add_bar(y=b.tier, x=b[p] * 1000, name=p, orientation="h")
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title="mean time per ok request (ms)")
    ms = b.assign(**{c: b[c] * 1000 for c in ["time", *PHASES]}).rename(columns={c: f"{c} (ms)" for c in ["time", *PHASES]})
    return Section("breakdown", "Time per tier and phase", _figure(fig, 160 + 60 * len(b)) + _table(ms))


def _resource_series(trace: Trace, part: Literal["pools", "stations"]) -> list[tuple[str, str, int, str]]:
    """(tier, resource, server, kind) of every pool or station in the summary."""
    found = []
    for tier, t in trace.summary["tiers"].items():
        for i, sv in enumerate(t["servers"]):
            named: dict[str, Any] = dict(sv["pools"] if part == "pools" else sv["stations"])
            found += [(tier, name, i, v["kind"]) for name, v in named.items()]
    return found


def _pools(trace: Trace) -> Section | None:
    pools = _resource_series(trace, "pools")
    if not pools:
        return None
    fig = go.Figure()
    step, bucket = trace.summary["window"], None
    for k, (tier, name, i, _) in enumerate(pools):
        for metric, dash in (("busy", None), ("queued", "dot"), ("rejected", "dash")):
            s = trace.series(tier, metric, name, i)
            if not s.empty:
                bucket = _series(fig, s[i], step, trace.end, f"{tier}[{i}].{name} {metric}", COLORS[k % len(COLORS)], dash) or bucket
    _time_axis(fig, trace)
    fig.update_yaxes(title="tokens busy / waiters / rejected per window")
    return Section("pools", "Pools over time", _figure(fig, 360) + _envelope_note(bucket, step))


def _control(trace: Trace) -> Section | None:
    """An online controller's run: the sizes in force over time (its `control` series)
    and the decisions that changed one, with their reasons."""
    c = trace.summary.get("control")
    if c is None:
        return None
    fig = go.Figure()
    for k, pool in enumerate(sorted({p for d in c["decisions"] for p in d["sizes"]})):
        s = trace.series(c["tier"], pool, "control", 0)
        if not s.empty:
            fig.add_trace(go.Scatter(x=s.index, y=s[0], name=f"{c['tier']}.{pool}", line={"shape": "hv", "color": COLORS[k % len(COLORS)]}))
    _time_axis(fig, trace)
    fig.update_yaxes(title="size in force")
    changes = [d for d in c["decisions"] if d["changed"]]
    table = pd.DataFrame(
        {
            "t (s)": [d["t"] for d in changes],
            "sizes": [", ".join(f"{p} {n}" for p, n in d["sizes"].items()) for d in changes],
            "reason": [d["reason"] for d in changes],
        }
    )
    note = f"<p>{html.escape(c['strategy'])} every {figure(c['interval'])} s on {html.escape(c['tier'])}: {len(changes)} changes in {len(c['decisions'])} decisions.</p>"
    return Section("control", "Online control", _figure(fig) + note + (_table(table) if changes else ""))


def _stations(trace: Trace) -> Section | None:
    stations = [(tier, name, i) for tier, name, i, _ in _resource_series(trace, "stations") if not trace.series(tier, "utilization", name, i).empty]
    if not stations:
        return None
    fig = go.Figure()
    step, bucket = trace.summary["window"], None
    for k, (tier, name, i) in enumerate(stations):
        s = trace.series(tier, "utilization", name, i)
        bucket = _series(fig, s[i], step, trace.end, f"{tier}[{i}].{name}", COLORS[k % len(COLORS)]) or bucket
    _time_axis(fig, trace)
    fig.update_yaxes(title="utilization", range=[0, 1.05], tickformat=".0%")
    return Section("stations", "Station utilization over time", _figure(fig) + _envelope_note(bucket, step))


def _bottleneck(trace: Trace) -> Section | None:
    b = bottleneck(trace)
    if b is None:
        return None
    name, step = f"{b.tier}[{b.server}].{b.resource}", trace.summary["window"]
    # The sentence and the plot beside it say the same: the resource's level over the
    # measured period (the plot's dashed line), how often it was at the top (the share
    # of its windows the plot's band reaches it), and the rule it is judged by.
    if b.family == GRACEFUL:
        series = trace.series(b.tier, "utilization", b.resource, b.server)[b.server]
        level, top, limit = f"mean utilization {b.level:.0%}", "at 99% or more", SATURATED
        rule = f"a station saturates at {SATURATED:.0%} mean utilization"
        axis = "utilization"
    else:
        size = trace.summary["tiers"][b.tier]["servers"][b.server]["pools"][b.resource]["size"]
        series = trace.series(b.tier, "busy", b.resource, b.server)[b.server] / size
        level, top, limit = f"mean occupancy {b.level:.0%} of its {size} tokens", "at its cap", 1.0
        rule = f"a pool saturates when at its cap in {PINNED:.0%} of the windows, or refusing requests"
        axis = f"share of the {size} tokens busy"
    verdict = f"{name} ({b.kind}): {level} over the measured period, {top} in {b.pinned:.0%} of its {figure(step)} s windows — " + (
        "saturated: this resource limits the system" if b.saturated else f"nothing is saturated ({rule}); this is the busiest resource"
    )
    fig = go.Figure()
    bucket = _series(fig, series, step, trace.end, name, COLORS[0])
    measured = [trace.summary["warmup"], trace.end]
    fig.add_scatter(
        x=measured, y=[b.level, b.level], mode="lines", name=f"mean over the measured period ({b.level:.0%})", line={"dash": "dash", "color": COLORS[1]}
    )
    fig.add_scatter(x=measured, y=[limit, limit], mode="lines", name=f"saturation ({limit:.0%})", line={"dash": "dot", "color": "grey"})
    _time_axis(fig, trace)
    fig.update_yaxes(title=axis, range=[0, 1.05], tickformat=".0%")
    table = resources(trace).drop(columns=["depth"])
    table = table.assign(level=100 * table.level, pinned=100 * table.pinned).rename(columns={"level": "level (%)", "pinned": "pinned (% of windows)"})
    body = f"<p class='verdict'>{html.escape(verdict)}</p>" + _figure(fig, 300) + _envelope_note(bucket, step) + _table(table)
    return Section("bottleneck", "Bottleneck", body)


def _fluctuations(trace: Trace) -> Section | None:
    r = trace.requests
    if r is None:
        return None
    ok = r.response_time[(r.status == "ok") & (r.response_time > 0)]
    if len(ok) < 10:
        return None
    b = bimodality(ok)
    modes = ", ".join(duration(m) for m in b.modes) or "—"
    unmeasured = unmeasured_retransmissions(trace)
    if unmeasured is None:
        per_minute = retransmissions_per_minute(trace)
        retransmitted = f"TCP retransmissions per minute: mean {per_minute.mean():.1f}, max {per_minute.max():.0f}; requests retransmitted: {(r.retransmissions > 0).mean():.2%}."
    else:
        retransmitted = f"TCP retransmissions not measured: {unmeasured}."
    text = f"Hartigan's dip {figure(b.dip)}, p = {figure(b.p_value)}: {'bimodal' if b.bimodal else 'unimodal'}; modes: {modes}. {retransmitted}"
    fig = go.Figure()
    # Binned by the logarithm (the modes lie decades apart), labelled in ms and s.
    fig.add_histogram(x=np.log10(ok.to_numpy()), nbinsx=80, name="ok requests")
    for m in b.modes:
        fig.add_vline(x=float(np.log10(m)), line_dash="dash", line_color="crimson")
    ticks = _log_ticks(float(ok.min()), float(ok.max()))
    fig.update_xaxes(title="response time (log scale)", tickvals=np.log10(ticks), ticktext=[duration(t) for t in ticks])
    fig.update_yaxes(title="requests")
    return Section("fluctuations", "Fluctuations: response-time distribution", f"<p>{html.escape(text)}</p>" + _figure(fig, 280))


def _log_ticks(low: float, high: float) -> list[float]:
    """Seconds at 1, 2 and 5 of each decade from `low` to `high` (only the 1s over more
    than three decades, where the others would crowd)."""
    decades = range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1)
    steps = (1, 2, 5) if len(decades) <= 4 else (1,)
    return [m * 10.0**d for d in decades for m in steps if low <= m * 10.0**d <= high] or [low, high]


def _missing(trace: Trace) -> Section | None:
    missing = trace.summary["missing"]
    if not missing:
        return None
    items = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in missing.items())
    return Section("missing", "Not in this trace", f"<ul>{items}</ul>")


# -- several runs -------------------------------------------------------------------


def _comparison(runs: list[tuple[str, Trace]]) -> Section:
    """Headline figures side by side, each run's change against the first."""

    def row(t: Trace) -> dict[str, float | None]:
        s = t.summary
        rt = figures(s["response_time"])
        return {
            "throughput (req/s)": s["throughput"],
            **{f"{k} requests": float(s["requests"][k]) for k in OUTCOMES},
            **{f"{p} (ms)": _ms(rt.get(p)) for p in ("mean", *HEADLINE_PERCENTILES)},
        }

    values = pd.DataFrame({name: row(t) for name, t in runs})
    base = values.iloc[:, 0]
    table = pd.DataFrame({"figure": values.index})
    for k, name in enumerate(values.columns):
        table[name] = values[name].to_numpy()
        if k:
            delta = (values[name] - base).to_numpy(dtype=float)
            table[f"Δ {name}"] = [_delta(d, b) for d, b in zip(delta, base.to_numpy(dtype=float))]
    return Section("comparison", "Runs side by side (Δ against the first)", _table(table))


def _delta(d: float, base: float) -> str:
    if not np.isfinite(d):
        return "—"
    return ("+" if d >= 0 else "-") + figure(abs(d)) + (f" ({d / base:+.1%})" if base else "")


def _ramp(traces: list[Trace], loads: list[float] | None) -> Section:
    table, knee, usl = ramp_of_traces(traces, loads)
    fig = go.Figure()
    fig.add_scatter(x=table.load, y=table.p90 * 1000, mode="lines+markers", name="p90 (ms)")
    fig.add_scatter(x=table.load, y=table.throughput, mode="lines+markers", name="throughput (req/s)", yaxis="y2")
    if usl is not None:
        n = np.linspace(table.load.min(), table.load.max(), 200)
        fig.add_scatter(x=n, y=usl.throughput(n), mode="lines", name="USL fit", yaxis="y2", line={"dash": "dot"})
    if knee.load is not None:
        fig.add_vline(x=knee.load, line_dash="dash", line_color="crimson", annotation_text=f"knee {knee.load:g}")
    fig.update_layout(yaxis={"title": "p90 response time (ms)"}, yaxis2={"title": "throughput (req/s)", "overlaying": "y", "side": "right"})
    fig.update_xaxes(title="load" + (" (given)" if loads else " (mean requests in flight)"))
    notes = [
        f"knee (capacity): load {knee.load:g}, p90 {figure(knee.value * 1000)} ms"
        if knee.load is not None and knee.value is not None
        else "no knee over these runs"
    ]
    if usl is not None:
        peak = f"N* = {figure(usl.n_star)}" if usl.n_star is not None else "no peak"
        notes.append(f"USL σ = {figure(usl.sigma)}, κ = {figure(usl.kappa)}, λ₁ = {figure(usl.lambda1)} req/s, {peak}")
    return Section("ramp", "Ramp", "<p>" + html.escape("; ".join(notes)) + "</p>" + _figure(fig, 380))


def _sizing(folder: Path) -> tuple[Section, pd.DataFrame]:
    """The λ(M, N) heat map of a `size optimize --out` folder, its optimum marked; and
    its predicted rates."""
    try:
        rates = pd.read_csv(folder / "rates.csv")
        best = json.loads((folder / "result.json").read_text())["optimum"]
    except (OSError, ValueError, KeyError, pd.errors.ParserError) as e:
        raise InputError(f"{folder}: not a `tierlab size optimize --out` folder (rates.csv, result.json): {e}") from None
    grid = rates.pivot_table(index="M", columns="N", values="lambda")
    fig = go.Figure(go.Heatmap(z=grid.to_numpy(), x=grid.columns, y=grid.index, colorscale="Viridis", colorbar={"title": "λ (sessions/s)"}))
    fig.add_scatter(
        x=[best["N"]], y=[best["M"]], mode="markers", marker={"symbol": "star", "size": 16, "color": "crimson"}, name=f"optimum M={best['M']}, N={best['N']}"
    )
    fig.update_xaxes(title="N (connections)")
    fig.update_yaxes(title="M (threads)")
    text = f"optimum: M = {best['M']}, N = {best['N']}, λ = {figure(best['lambda'])} sessions/s"
    return Section("sizing", "Pool sizing: λ(M, N)", f"<p>{html.escape(text)}</p>" + _figure(fig, 420)), rates


def _validation(path: Path, rates: pd.DataFrame | None) -> Section:
    """Measured λ_max per (M, N) against the prediction: the file's `predicted` column,
    else the sizing folder's λ(M, N)."""
    try:
        measured = pd.DataFrame(json.loads(path.read_text())["result"]) if path.suffix == ".json" else pd.read_csv(path)
    except (OSError, ValueError, KeyError, pd.errors.ParserError) as e:
        raise InputError(f"{path}: not the output of `tierlab size validate --json/--csv`: {e}") from None
    lacking = [c for c in ("M", "N", "lambda_max") if c not in measured.columns]
    if lacking:
        raise InputError(f"{path}: no column(s) {', '.join(lacking)}; give the output of `tierlab size validate --json/--csv`")
    if "predicted" not in measured.columns:
        if rates is None:
            raise InputError(f"{path} has no predicted λ: give the `size optimize --out` folder with --sizing as well")
        measured = measured.merge(rates[["M", "N", "lambda"]].rename(columns={"lambda": "predicted"}), on=["M", "N"], how="left")
    d = measured[["M", "N", "predicted", "lambda_max"]].rename(columns={"lambda_max": "measured"})
    d = d.assign(error=(d.predicted - d.measured) / d.measured)
    top = float(np.nanmax(d[["predicted", "measured"]].to_numpy())) * 1.05
    fig = go.Figure()
    fig.add_scatter(x=d.measured, y=d.predicted, mode="markers", text=[f"M={m}, N={n}" for m, n in zip(d.M, d.N)], name="configurations")
    fig.add_scatter(x=[0, top], y=[0, top], mode="lines", line={"dash": "dot", "color": "grey"}, name="predicted = measured")
    fig.update_xaxes(title="measured λ_max (sessions/s)")
    fig.update_yaxes(title="predicted λ (sessions/s)")
    text = f"mean absolute error {d.error.abs().mean():.1%} over {d.error.notna().sum()} configurations"
    return Section("validation", "Pool sizing: predicted vs measured", f"<p>{html.escape(text)}</p>" + _figure(fig, 380) + _table(d))


def write(rep: Report, path: str | Path) -> Path:
    out = Path(path)
    out.write_text(rep.html, encoding="utf-8")
    return out
