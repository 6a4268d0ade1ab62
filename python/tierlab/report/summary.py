"""The end-of-run summary as terminal tables (rich), the same for a simulated and a
live trace: the headline, response times per request type, every station and pool of
every server, and what each clustered tier's dispatchers did. Columns fold rather
than cut a figure short when the terminal is narrow."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from ..trace import Trace
from ..trace.outcome import backlog_note
from ..trace.schema import OUTCOMES, figures
from .numbers import figure

# A clustered tier's dispatch figures (docs/trace.md) and their column headings.
DISPATCH_COLUMNS = {
    "tier": "tier",
    "dispatchers": "dispatchers",
    "sessions_created": "sessions created",
    "session_migrations": "migrations",
    "queued": "queued",
    "rejected_queue_full": "rejected (queue full)",
    "rejected_queue_timeout": "rejected (queue timeout)",
    "sync_messages": "sync messages",
    "sync_payload_bytes": "bytes per sync message",
}


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{1000 * x:.1f}"


def frame_table(title: str, df: Any) -> Table:
    """A pandas frame as a rich table: numbers rounded to what they mean
    (`numbers.figure`) and right-aligned, text left-aligned. Every command prints its
    tables through this."""
    t = Table(title=title, title_justify="left")
    for c in df.columns:
        text = df[c].dtype.kind not in "biufc"  # not a number, a flag nor a count
        t.add_column(str(c), justify="left" if text else "right", overflow="fold")
    for row in df.itertuples(index=False):
        t.add_row(*(figure(v) for v in row))
    return t


def print_summary(trace: Trace, out: Console) -> None:
    s = trace.summary
    req = s["requests"]
    rt = figures(s["response_time"])
    out.print(
        f"[bold]{s['model']}[/] ({s['source']}): {s['measured_seconds']:.0f} s measured, throughput [bold]{s['throughput']:.2f}[/] req/s, "
        f"sessions {s['sessions']['throughput']:.3f}/s, ok {req['ok']}, rejected {req['rejected']}, "
        f"timeout {req['timeout']}, error {req['error']}, unfinished {req['unfinished']}"
    )
    overloaded = backlog_note(s)
    if overloaded:
        out.print(f"[red]overloaded:[/] {overloaded}")
    errors = {k: v for k, v in (s["errors"] or {}).items() if v}
    if errors:
        out.print("[yellow]failed requests by kind:[/] " + ", ".join(f"{k} {v}" for k, v in errors.items()))
    # Every outcome per type: an import's failed label shows its errors on its own row
    # (JMeter's "Missing page": ok 0, rejected 0, and its 45 errors only in the headline).
    t = Table(title="requests, and response time of the ok ones (ms)", title_justify="left")
    for c in ["type", *OUTCOMES, "req/s", "mean", "p50", "p90", "p95", "p99", "p99.9"]:
        t.add_column(c, justify="left" if c == "type" else "right", overflow="fold")
    rows = [("all", req, s["throughput"], rt)] + [(n, v["requests"], v["throughput"], figures(v["response_time"])) for n, v in s["types"].items()]
    for name, r, x, q in rows:
        t.add_row(name, *(figure(dict(r)[k]) for k in OUTCOMES), f"{x:.2f}", *(_ms(q.get(k)) for k in ["mean", "p50", "p90", "p95", "p99", "p99.9"]))
    out.print(t)
    u = Table(title="resources (measured period)", title_justify="left")
    for c in ["tier", "server", "resource", "utilization / mean busy", "max busy", "pinned", "mean queued", "waited", "rejected"]:
        u.add_column(c, justify="left" if c in ("tier", "resource") else "right", overflow="fold")
    for tier, tv in sorted(s["tiers"].items(), key=lambda kv: kv[1]["position"]):
        for i, sv in enumerate(tv["servers"]):
            for name, st in sv["stations"].items():
                u.add_row(tier, str(i), name, f"{st['utilization']:.1%}", "", "", "", "", "")
            for name, p in sv["pools"].items():
                u.add_row(
                    tier,
                    str(i),
                    name,
                    f"{p['mean_busy']:.2f} / {p['size']}",
                    f"{p['busy_max']:g}",
                    f"{p['pinned']:.0%}",
                    f"{p['mean_queued']:.2f}",
                    str(p["waited"]),
                    str(p["rejected"]),
                )
    if u.row_count:
        out.print(u)
    d = Table(title="dispatch (measured period)", title_justify="left")
    for c in DISPATCH_COLUMNS.values():
        d.add_column(c, justify="left" if c == "tier" else "right", overflow="fold")
    for tier, tv in sorted(s["tiers"].items(), key=lambda kv: kv[1]["position"]):
        if tv["dispatch"] is not None and len(tv["servers"]) > 1:
            row = {"tier": tier, **tv["dispatch"]}
            d.add_row(*(f"{row[k]:.1f}" if isinstance(row[k], float) else str(row[k]) for k in DISPATCH_COLUMNS))
    if d.row_count:
        out.print(d)
