"""`tierlab control`: an online controller beside a running testbed (docs/control.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import err


@click.command("control")
@click.option(
    "--strategy",
    type=click.Choice(["twin", "gradient", "static"]),
    required=True,
    help="twin: the best sizes the re-calibrated twin predicts (give --twin); gradient: Gradient2 on the thread pool; static: observe and log only.",
)
@click.option("--twin", "twin_path", type=click.Path(dir_okay=False, exists=True), help="twin: the twin model (`tierlab twin calibrate … --out twin.yaml`).")
@click.option(
    "--slo-p99", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True, help="twin: seconds the p99 response time must stay under."
)
@click.option(
    "--hysteresis", type=click.FloatRange(min=0), default=0.05, show_default=True, help="twin: the least predicted gain that moves the sizes (0.05: 5%)."
)
@click.option("--workdir", default=".tierlab/live", show_default=True, type=click.Path(file_okay=False), help="The running testbed's state folder.")
@click.option("--interval", type=click.FloatRange(min=0.5), default=5.0, show_default=True, help="Seconds between decisions.")
@click.option("--bounds", default="threads=2..64,connections=1..32", show_default=True, help="Each re-sized pool's least..greatest size.")
@click.option("--max-step", type=click.IntRange(min=1), help="The most one decision may move a pool's size (default: no limit).")
@click.option(
    "--revert-margin",
    type=float,
    default=0.01,
    show_default=True,
    help="How far the error share may rise after a change before it is reverted (0.01: one point).",
)
@click.option("--revert-hold", type=int, default=6, show_default=True, help="Intervals a reverted change's sizes are held before the next move.")
@click.option("--dwell", type=int, default=0, show_default=True, help="Intervals a change stands before the next may be made (0: none).")
@click.option("--metrics-port", type=click.IntRange(1, 65535), help="Serve the decisions to Prometheus on 127.0.0.1:PORT/metrics.")
@click.option("--dry-run", is_flag=True, help="Only recommend: log and print the decisions, change nothing.")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), help="The decisions' log (default: WORKDIR/control-<time>.jsonl); it must not exist.")
@click.option("--for", "for_seconds", type=click.FloatRange(min=0, min_open=True), help="Stop after this many seconds (default: run until Ctrl-C).")
def control_cmd(
    strategy,
    twin_path,
    slo_p99,
    hysteresis,
    workdir,
    interval,
    bounds,
    max_step,
    revert_margin,
    revert_hold,
    dwell,
    metrics_port,
    dry_run,
    log_path,
    for_seconds,
) -> None:
    """Keep a running testbed's pools sized online: observe its servers every interval,
    decide with the same controller the simulator runs, re-size through the admin
    endpoint. Ctrl-C leaves the last configuration in force and says what it is."""
    import time

    from ..errors import InputError
    from ..experiments.control import control_loop, guard_options, parse_bounds
    from ..live.decisions import register_control_log
    from ..live.testbed import Testbed
    from ..model.spec import Twin

    if (strategy == "twin") != (twin_path is not None):
        raise InputError("--twin: give the twin model with --strategy twin, and only then")
    twin = Twin(model=twin_path, slo_p99=slo_p99, hysteresis=hysteresis) if twin_path else None
    parsed = parse_bounds(bounds)
    revert, dwell = guard_options(revert_margin, revert_hold, dwell)
    bed = Testbed(workdir)
    log = Path(log_path) if log_path else Path(workdir) / f"control-{time.strftime('%Y%m%dT%H%M%S')}.jsonl"
    err.print(f"control: {strategy} every {interval:g} s on {len(bed.admins)} server(s), bounds {bounds}{' (dry run)' if dry_run else ''}; log {log}")
    # A `tierlab live run` on this testbed puts the decisions made during it in its trace.
    register_control_log(workdir, log)
    try:
        control_loop(
            bed.admins,
            strategy,
            parsed,
            interval,
            log,
            dry_run=dry_run,
            duration=for_seconds,
            say=err.print,
            max_step=max_step,
            metrics_port=metrics_port,
            twin=twin,
            revert=revert,
            dwell=dwell,
            pids=bed.server_pids(),
        )
    except KeyboardInterrupt:
        sys.exit(130)  # the loop said which sizes stay in force
