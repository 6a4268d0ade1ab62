"""`tierlab report`: one self-contained HTML page of one or several runs — simulated,
live or imported — that a browser opens without a network (plotly's JavaScript is
inlined once; figures zoom and pan, which a 100 ms series needs) and that prints.

Each section is there only when the traces hold its data (`Report.sections` lists
the DOM ids). One run: headline, response time over time (100 ms and 10 s), per-type
percentiles, per-tier time breakdown, pools and stations over time, the bottleneck,
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
from plotly.offline import get_plotlyjs

from ..analysis.bottleneck import bottleneck, breakdown, resources
from ..analysis.fluctuations import bimodality, retransmissions_per_minute
from ..errors import InputError
from ..experiments.ramp import ramp_of_traces
from ..trace import Trace, window_of
from ..trace.schema import OUTCOMES, PHASES, figures

FINE, COARSE = 0.1, 10.0
HEADLINE_PERCENTILES = ("p50", "p90", "p99", "p99.9")


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
    for make in (_response_time, _types, _breakdown, _pools, _stations, _bottleneck, _fluctuations, _missing):
        s = make(trace)
        if s is not None:
            found.append(s)
    return found


# -- helpers -------------------------------------------------------------------


def _figure(fig: go.Figure, height: int = 320) -> str:
    fig.update_layout(height=height, margin={"l": 60, "r": 20, "t": 30, "b": 45}, template="plotly_white", legend={"orientation": "h", "y": -0.25})
    return str(fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False, "responsive": True}))


def _table(df: pd.DataFrame, floats: str = "{:.4g}") -> str:
    return str(df.to_html(index=False, border=0, classes="figures", na_rep="—", float_format=lambda x: floats.format(x)))


def _ms(x: float | None) -> float | None:
    return None if x is None else x * 1000


# -- one run --------------------------------------------------------------------


def _headline(trace: Trace) -> Section:
    s = trace.summary
    rt = figures(s["response_time"])
    rows = [
        ("model", s["model"]),
        ("source", s["source"]),
        ("measured", f"{s['measured_seconds']:.4g} s (after {s['warmup']:g} s warm-up)"),
        ("throughput", f"{s['throughput']:.4g} req/s"),
        *((k, f"{s['requests'][k]:,}") for k in ("ok", "rejected", "timeout", "error")),
        *((f"{p} response time", f"{rt[p] * 1000:.4g} ms" if p in rt else "—") for p in HEADLINE_PERCENTILES),
    ]
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
    coarse = fine.groupby(window_of(fine.index.to_numpy(), COARSE)).mean()
    step = trace.summary["window"] if trace.requests is None else FINE
    fig = go.Figure()
    fig.add_scatter(x=fine.index, y=fine.to_numpy() * 1000, mode="lines", name=f"{step:g} s windows", line={"width": 1})
    fig.add_scatter(x=coarse.index + COARSE / 2, y=coarse.to_numpy() * 1000, mode="lines+markers", name=f"{COARSE:g} s windows")
    fig.add_vline(x=trace.summary["warmup"], line_dash="dot", line_color="grey")
    fig.update_xaxes(title="time (s)")
    fig.update_yaxes(title="mean response time (ms)")
    return Section("response-time", "Response time over time", _figure(fig))


def _types(trace: Trace) -> Section | None:
    types = trace.summary["types"]
    if not types:
        return None
    rows = []
    for name, t in types.items():
        rt = figures(t["response_time"])
        rows.append(
            {
                "type": name,
                **{k: dict(t["requests"])[k] for k in OUTCOMES},
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
    return Section("breakdown", "Time per tier and phase", _figure(fig, 120 + 60 * len(b)) + _table(b.assign(**{c: b[c] * 1000 for c in ["time", *PHASES]})))


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
    for tier, name, i, _ in pools:
        for metric, dash in (("busy", None), ("queued", "dot"), ("rejected", "dash")):
            s = trace.series(tier, metric, name, i)
            if not s.empty:
                fig.add_scatter(x=s.index, y=s[i], mode="lines", name=f"{tier}[{i}].{name} {metric}", line={"width": 1, "dash": dash})
    fig.update_xaxes(title="time (s)")
    fig.update_yaxes(title="tokens busy / waiters / rejected per window")
    return Section("pools", "Pools over time", _figure(fig, 360))


def _stations(trace: Trace) -> Section | None:
    stations = [(tier, name, i) for tier, name, i, _ in _resource_series(trace, "stations") if not trace.series(tier, "utilization", name, i).empty]
    if not stations:
        return None
    fig = go.Figure()
    for tier, name, i in stations:
        s = trace.series(tier, "utilization", name, i)
        fig.add_scatter(x=s.index, y=s[i], mode="lines", name=f"{tier}[{i}].{name}", line={"width": 1})
    fig.update_xaxes(title="time (s)")
    fig.update_yaxes(title="utilization", range=[0, 1.05])
    return Section("stations", "Station utilization over time", _figure(fig))


def _bottleneck(trace: Trace) -> Section | None:
    b = bottleneck(trace)
    if b is None:
        return None
    verdict = f"{b.tier}[{b.server}].{b.resource} ({b.kind}): level {b.level:.0%}, pinned in {b.pinned:.0%} of the windows — " + (
        "saturated: this resource limits the system" if b.saturated else "nothing is saturated; this is the busiest resource"
    )
    table = resources(trace).drop(columns=["depth"])
    return Section("bottleneck", "Bottleneck", f"<p class='verdict'>{html.escape(verdict)}</p>" + _table(table))


def _fluctuations(trace: Trace) -> Section | None:
    r = trace.requests
    if r is None:
        return None
    ok = r.response_time[(r.status == "ok") & (r.response_time > 0)]
    if len(ok) < 10:
        return None
    b = bimodality(ok)
    modes = ", ".join(f"{m * 1000:.4g} ms" for m in b.modes) or "—"
    per_minute = retransmissions_per_minute(trace)
    text = (
        f"Hartigan's dip {b.dip:.4f}, p = {b.p_value:.3g}: {'bimodal' if b.bimodal else 'unimodal'}; modes: {modes}. "
        f"TCP retransmissions per minute: mean {per_minute.mean():.1f}, max {per_minute.max():.0f}; "
        f"requests retransmitted: {(r.retransmissions > 0).mean():.2%}."
    )
    fig = go.Figure()
    fig.add_histogram(x=np.log10(ok.to_numpy()), nbinsx=80, name="ok requests")
    for m in b.modes:
        fig.add_vline(x=float(np.log10(m)), line_dash="dash", line_color="crimson")
    fig.update_xaxes(title="log10 response time (s)")
    fig.update_yaxes(title="requests")
    return Section("fluctuations", "Fluctuations: response-time distribution", f"<p>{html.escape(text)}</p>" + _figure(fig, 280))


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
            **{f"{k} requests": float(s["requests"][k]) for k in ("ok", "rejected", "timeout", "error")},
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
    return f"{d:+.4g}" + (f" ({d / base:+.1%})" if base else "")


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
        f"knee (capacity): load {knee.load:g}, p90 {knee.value * 1000:.4g} ms"
        if knee.load is not None and knee.value is not None
        else "no knee over these runs"
    ]
    if usl is not None:
        peak = f"N* = {usl.n_star:.3g}" if usl.n_star is not None else "no peak"
        notes.append(f"USL σ = {usl.sigma:.3g}, κ = {usl.kappa:.3g}, λ₁ = {usl.lambda1:.4g} req/s, {peak}")
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
    text = f"optimum: M = {best['M']}, N = {best['N']}, λ = {best['lambda']:.4g} sessions/s"
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
