"""`tierlab report`: one self-contained HTML page of one or several runs."""

from __future__ import annotations

import click

from .common import about, err, floats


@click.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option(
    "--out", "out_file", required=True, type=click.Path(dir_okay=False), help="The HTML file to write (self-contained: no network needed to view it)."
)
@click.option("--loads", help="With 3 runs or more: the load of each, comma-separated in the order given, for the ramp (default: mean requests in flight).")
@click.option("--sizing", "sizing_dir", type=click.Path(file_okay=False), help="A `tierlab size optimize --out` folder: add its λ(M, N) heat map.")
@click.option(
    "--validation", type=click.Path(dir_okay=False), help="`tierlab size validate`'s --json or --csv: measured λ_max against the prediction (with --sizing)."
)
@click.option("--title", help="The page title (default: the run's folder name).")
def report_cmd(run_dirs, out_file, loads, sizing_dir, validation, title) -> None:
    """Write a report of RUN_DIR… (traces: simulated, live or imported): one run in
    detail; several side by side with deltas, and as a ramp with its knee from three on."""
    from pathlib import Path

    from ..report.html import report, write
    from ..trace import read_trace

    runs = []
    for d in run_dirs:
        with about(d):
            runs.append((Path(d).name, read_trace(d)))
    rep = report(runs, floats(loads) if loads else None, sizing_dir, title)
    path = write(rep, out_file)
    err.print(f"report written to [bold]{path}[/] ({path.stat().st_size / 1e6:.1f} MB; sections: {', '.join(rep.sections)})")
