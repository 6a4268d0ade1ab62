"""`tierlab import jmeter|k6|locust|hlog`: another load tool's results as a trace."""

from __future__ import annotations

from typing import Any

import click

from . import WholeHelp
from .common import FORCE, about, err, options, out

OUT = options(
    click.option(
        "--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Write the trace (summary.json, timeseries.parquet, requests.parquet) here."
    ),
    click.option("--warmup", type=click.FloatRange(min=0), default=0.0, show_default=True, help="Seconds from the first request that are not measured."),
    click.option("--quiet", is_flag=True, help="Do not print the summary."),
    FORCE,
)
WINDOW = click.option("--window", type=click.FloatRange(min=0, min_open=True), default=0.1, show_default=True, help="Seconds per window of the client series.")


@click.group("import", cls=WholeHelp)
def import_cmd() -> None:
    """Results of another load tool as a trace: every analysis and `tierlab report` read it."""


def _write(results: str, read: Any, out_dir: str, quiet: bool, force: bool) -> None:
    from ..report.summary import print_summary
    from ..trace.folder import trace_folder

    trace_folder(out_dir, force)  # before reading a large file
    with about(results):
        trace = read()
    folder = trace.write(out_dir, force)
    if not quiet:
        print_summary(trace, out)
    for part, why in trace.summary["missing"].items():
        err.print(f"[dim]not in the trace: {part} — {why}[/]")
    err.print(f"trace written to [bold]{folder}[/]")


@import_cmd.command("jmeter")
@click.argument("results", type=click.Path(dir_okay=False))
@OUT
@WINDOW
def import_jmeter(results, out_dir, warmup, quiet, force, window) -> None:
    """JMeter's RESULTS.jtl, CSV (with its header line) or XML: one request per sample,
    the label as the request type."""
    from ..trace.imports import jmeter

    _write(results, lambda: jmeter.read(results, window, warmup), out_dir, quiet, force)


@import_cmd.command("k6")
@click.argument("results", type=click.Path(dir_okay=False))
@OUT
@WINDOW
def import_k6(results, out_dir, warmup, quiet, force, window) -> None:
    """k6's `--out json=RESULTS.json` (or .json.gz): one request per http_req_duration
    point, the `name` tag as the request type."""
    from ..trace.imports import k6

    _write(results, lambda: k6.read(results, window, warmup), out_dir, quiet, force)


@import_cmd.command("locust")
@click.argument("prefix")
@OUT
def import_locust(prefix, out_dir, warmup, quiet, force) -> None:
    """What `locust --csv PREFIX [--csv-full-history]` wrote: per-name aggregates and
    per-second history (Locust exports no per-request records)."""
    from ..trace.imports import locust

    _write(prefix, lambda: locust.read(prefix, warmup), out_dir, quiet, force)


@import_cmd.command("hlog")
@click.argument("results", type=click.Path(dir_okay=False))
@OUT
@click.option("--unit", type=click.Choice(["ns", "us", "ms", "s"]), default="us", show_default=True, help="The unit of the recorded values (wrk2: us).")
def import_hlog(results, out_dir, warmup, quiet, force, unit) -> None:
    """An HdrHistogram interval log (.hlog, e.g. wrk2's): distributions per interval,
    the tag (if any) as the request type."""
    from ..trace.imports import hlog

    _write(results, lambda: hlog.read(results, unit, warmup), out_dir, quiet, force)


@import_cmd.command("otel")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@OUT
@click.option(
    "--window",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Seconds per window of the server's series (the metrics' export interval, or a multiple of it).",
)
@click.option("--service", help="The service.name to import when the files hold several services.")
def import_otel(files, out_dir, warmup, quiet, force, window, service) -> None:
    """OpenTelemetry's OTLP/JSON lines (the Collector's file exporter, the SDKs' and the
    Java agent's logging-otlp exporters; .gz too): a request per SERVER span, its
    database accesses from the CLIENT spans under it, the pool and CPU metrics as the
    server's series."""
    from ..trace.imports import otel

    _write(files[0], lambda: otel.read(list(files), window, warmup, service), out_dir, quiet, force)
