"""`tierlab usl fit`: the Universal Scalability Law through a throughput table."""

from __future__ import annotations

import click

from . import WholeHelp
from .common import about, out, write_json


@click.group(cls=WholeHelp)
def usl() -> None:
    """Universal Scalability Law (Gunther): contention σ, coherency κ, peak N*."""


@usl.command("fit")
@click.argument("table", type=click.Path(dir_okay=False))
@click.option("--json", "json_out", type=click.Path(dir_okay=False, allow_dash=True), help="Write σ, κ, λ₁, N* and their intervals as JSON ('-': stdout).")
@click.option("--plot", type=click.Path(dir_okay=False), help="Write the measured points and the fitted curve as a PNG.")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95, show_default=True, help="Confidence level of the intervals.")
@click.option("--concurrency", "column", default="concurrency", show_default=True, help="The column holding the concurrency (`load` in a ramp's CSV).")
def usl_fit(table, json_out, plot, level, column) -> None:
    """Fit X(N) = λ₁N / (1 + σ(N−1) + κN(N−1)) to TABLE.csv (columns
    concurrency,throughput; several rows per concurrency allowed)."""
    from ..analysis.usl import fit, read_table
    from ..report.plots import usl_plot

    with about(table):
        df = read_table(table, column)
        result = fit(df.concurrency, df.throughput, level)
    if json_out != "-":
        out.print(describe(result), markup=False)
    if json_out:
        write_json(None if json_out == "-" else json_out, result.as_json())
    if plot:
        usl_plot(result, df.concurrency, df.throughput, plot)


def describe(result) -> str:
    """One line: the parameters, N* and their intervals."""

    from ..report.numbers import figure

    def ci(name: str) -> str:
        low, high = result.ci[name]
        return "" if low is None else f" [{figure(low)}, {'∞' if high is None else figure(high)}]"

    peak = "no peak (κ = 0)" if result.n_star is None else f"N* = {figure(result.n_star)}{ci('n_star')}"
    return (
        f"USL: σ = {figure(result.sigma)}{ci('sigma')}, κ = {figure(result.kappa)}{ci('kappa')}, "
        f"λ₁ = {figure(result.lambda1)}{ci('lambda1')} req/s, {peak} ({result.level:.0%} intervals)"
    )
