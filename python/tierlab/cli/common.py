"""What every command shares: the consoles, the run progress bar, option lists
applied to several commands, and small parsers."""

from __future__ import annotations

import json
import math
import numbers
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..errors import InputError, TraceError

if TYPE_CHECKING:
    from ..run.progress import LineProgress

# Tables stay whole when piped, however wide (rich would squeeze them to 80 columns and
# cut figures: `1260…`); messages are never wrapped, so a path or a field name stays on
# one line.
PIPED_WIDTH = 100_000
out = Console(width=None if sys.stdout.isatty() else PIPED_WIDTH)
err = Console(stderr=True, soft_wrap=True)


def run_progress(quiet: bool = False, counts: bool = True) -> Progress | LineProgress:
    """A run's progress (simulated or live): a bar on a terminal, a line per tenth in a
    log; `counts`: with the live request counts (see `live_tick`)."""
    from ..run.progress import progress  # `tierlab.run` loads the engine and pandas: only runs need it

    return progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>5.1f}%"),
        *([TextColumn("{task.fields[counts]}")] if counts else []),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        disable=quiet,
    )


def live_tick(bar: Progress | LineProgress, task: Any, counts: bool = True) -> Callable[..., None]:
    """The run's progress callback for `bar`; `counts`: show the live request counts."""

    def tick(fraction: float, finished: float = 0, failed: float = 0) -> None:
        if counts:
            bar.update(task, completed=fraction, counts=f"{finished:,.0f} done, {failed:,.0f} failed")
        else:
            bar.update(task, completed=fraction)

    return tick


FORCE = click.option("--force", is_flag=True, help="Replace the trace --out holds, every file of it (default: refuse a folder that holds a trace).")


def execute(
    label: str, description: str, run: Callable[[Callable[..., None]], Any], out_dir: str, quiet: bool, counts: bool = True, force: bool = False
) -> Path:
    """Run `run(progress)` — a simulation or a live run — under a progress bar, write
    its trace to `out_dir` (on Ctrl-C, what was measured until then) and print its
    summary; exit with 130 if it was interrupted. A folder holding a trace is refused
    before the run, unless `force`."""
    from ..report.summary import print_summary
    from ..run import RunInterrupted
    from ..trace.folder import trace_folder

    trace_folder(out_dir, force)

    with run_progress(quiet, counts) as bar:
        task = bar.add_task(f"[bold]{label}[/] {description}", total=1.0, counts="")
        try:
            trace, stopped = run(live_tick(bar, task, counts)), False
        except RunInterrupted as e:
            trace, stopped = e.result, True
    folder = trace.write(out_dir, force)
    if not quiet:
        print_summary(trace, out)
    if stopped:
        err.print(f"[yellow]interrupted[/] at t = {trace.end:.1f} s; wrote what was measured to {folder}")
        sys.exit(130)
    err.print(f"trace written to [bold]{folder}[/]")
    return folder


@contextmanager
def about(path: str) -> Iterator[None]:
    """An error from reading or analysing the input at `path` names it."""
    try:
        yield
    except (TraceError, InputError) as e:
        if path in str(e):
            raise
        raise type(e)(f"{path}: {e}") from None


def run_length(duration: float | None = None, warmup: float | None = None) -> Callable:
    """`--duration`, `--warmup` and `--set`, meaning the same on every command that runs
    a model: they override the model's `run.duration` — the total seconds of each run,
    the warm-up included — and `run.warmup` (defaults: the model's, or those given), and
    any field by its dotted path (`changed`)."""

    def default(value: float | None, field: str) -> str:
        return f"the model's run.{field}" if value is None else f"{value:g}"

    return options(
        SET,
        click.option(
            "--duration",
            type=click.FloatRange(min=0, min_open=True),
            default=duration,
            help=f"Seconds of each run, warm-up included (default: {default(duration, 'duration')}).",
        ),
        click.option(
            "--warmup",
            type=click.FloatRange(min=0),
            default=warmup,
            help=f"Seconds at the start of each run that are not measured (default: {default(warmup, 'warmup')}).",
        ),
    )


def _set_values(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> None:
    """`--set PATH=VALUE`s parsed once, VALUE by the model file's YAML rules (`16`,
    `0.5`, `1e-3`, `transaction`, `{exponential: 0.002}`), kept on the command's context
    for `changed`: every command that runs a model loads it through `changed` (or
    `with_run_length`), so none of them needs a parameter of its own for it."""
    import yaml

    from ..model import load_yaml

    changes: dict[str, Any] = {}
    for text in values:
        path, eq, raw = text.partition("=")
        path = path.strip()
        if not eq or not path:
            raise click.BadParameter(f"{text!r}: give PATH=VALUE, e.g. tiers.app.pools.threads.size=16", ctx, param)
        if path in changes:
            raise click.BadParameter(f"{path} is set twice; give each path once", ctx, param)
        try:
            changes[path] = load_yaml(raw)
        except yaml.YAMLError as e:
            raise click.BadParameter(f"{path}: {raw!r} is not a YAML value ({getattr(e, 'problem', e)})", ctx, param) from None
    ctx.meta[SET_KEY] = changes


SET_KEY = "tierlab.set"
SET = click.option(
    "--set",
    "set_values",
    multiple=True,
    metavar="PATH=VALUE",
    expose_value=False,
    callback=_set_values,
    help="Change the model's field at this dotted path before running (repeatable), e.g. --set tiers.app.pools.threads.size=16; VALUE is read as YAML.",
)


def changed(model: Any) -> Any:
    """MODEL (a path or a model) with the command's `--set` changes applied (an error
    names the path and the model file)."""
    from ..model import load_model

    ctx = click.get_current_context(silent=True)
    changes = ctx.meta.get(SET_KEY, {}) if ctx is not None else {}
    loaded = load_model(model)
    return loaded.with_changes(changes) if changes else loaded


def with_run_length(model: Any, duration: float | None, warmup: float | None) -> Any:
    """MODEL (a path or a model) with `--set`, `--duration` and `--warmup` applied."""
    return changed(model).with_run(duration=duration, warmup=warmup)


def options(*decorators: Callable) -> Callable:
    """Apply click options in the order listed (one list shared by several commands)."""

    def apply(f: Callable) -> Callable:
        for o in reversed(decorators):
            f = o(f)
        return f

    return apply


def ints(text: str) -> list[int]:
    return _values(text, int, "whole numbers")


def floats(text: str) -> list[float]:
    return _values(text, _finite, "numbers")


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(text)
    return x


def _values(text: str, parse: Callable[[str], Any], what: str) -> list:
    """A comma-separated option value (`--loads 1,2,4`) as a list."""
    try:
        values = [parse(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values:
        raise InputError(f"expected comma-separated {what}, got {text!r}")
    return values


MACHINE_OUTPUT = options(
    click.option(
        "--json",
        "json_out",
        type=click.Path(dir_okay=False, allow_dash=True),
        help="Also write the result as JSON to this file; '-': to stdout, instead of the tables.",
    ),
    click.option(
        "--csv",
        "csv_out",
        type=click.Path(dir_okay=False, allow_dash=True),
        help="Also write the table as CSV to this file; '-': to stdout, instead of the tables.",
    ),
)


def for_people(json_out: str | None, csv_out: str | None) -> bool:
    """Whether the tables are printed: not when stdout carries JSON or CSV."""
    if json_out == csv_out == "-":
        raise InputError("--json - and --csv - cannot share stdout; write one of them to a file")
    return "-" not in (json_out, csv_out)


def for_machines(json_out: str | None, csv_out: str | None, data: Callable[[], dict], table: Callable[[], Any]) -> None:
    """Write `data()` as JSON and `table()` (a pandas frame) as CSV where asked ('-': stdout)."""
    if json_out:
        write_json(None if json_out == "-" else json_out, data())
    if csv_out:
        text = table().to_csv(index=False)
        if csv_out == "-":
            click.echo(text, nl=False)
        else:
            Path(csv_out).write_text(text)


def write_json(path: str | None, data: dict) -> None:
    """To `path`, or to stdout when no path is given. A figure that was not measured
    (NaN: e.g. retransmissions without records) is null: JSON has no NaN."""
    text = json.dumps(_no_nan(data), indent=2, sort_keys=True, default=float, allow_nan=False)
    if path:
        Path(path).write_text(text + "\n")
    else:
        click.echo(text)


def _no_nan(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _no_nan(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_no_nan(v) for v in node]
    if isinstance(node, numbers.Real) and not math.isfinite(node):  # numpy's floats too
        return None
    return node
