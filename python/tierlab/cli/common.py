"""What every command shares: the consoles, the run progress bar, option lists
applied to several commands, and small parsers."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..errors import InputError, TraceError

# Wide tables stay whole when piped (rich would squeeze them to 80 columns); messages
# are never wrapped, so a path or a field name stays on one line.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)


def run_progress(label: str, quiet: bool = False, counts: bool = True) -> Progress:
    """A run's progress bar (simulated or live); `counts`: with the live request counts
    (see `live_tick`)."""
    return Progress(
        TextColumn(f"[bold]{label}[/] {{task.description}}"),
        BarColumn(),
        TextColumn("{task.percentage:>5.1f}%"),
        *([TextColumn("{task.fields[counts]}")] if counts else []),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        disable=quiet,
        transient=True,
    )


def live_tick(bar: Progress, task: Any) -> Callable[..., None]:
    """The load generator's progress callback for `bar`."""

    def tick(fraction: float, finished: float = 0, failed: float = 0) -> None:
        bar.update(task, completed=fraction, counts=f"{finished:,.0f} done, {failed:,.0f} failed")

    return tick


def execute(label: str, description: str, run: Callable[[Callable[..., None]], Any], out_dir: str, quiet: bool, counts: bool = True) -> Path:
    """Run `run(progress)` — a simulation or a live run — under a progress bar, write
    its trace to `out_dir` (on Ctrl-C, what was measured until then) and print its
    summary; exit with 130 if it was interrupted."""
    from ..report.summary import print_summary
    from ..run import RunInterrupted

    with run_progress(label, quiet, counts) as bar:
        task = bar.add_task(description, total=1.0, counts="")
        try:
            trace, stopped = run(live_tick(bar, task)), False
        except RunInterrupted as e:
            trace, stopped = e.result, True
    folder = trace.write(out_dir)
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


def options(*decorators: Callable) -> Callable:
    """Apply click options in the order listed (one list shared by several commands)."""

    def apply(f: Callable) -> Callable:
        for o in reversed(decorators):
            f = o(f)
        return f

    return apply


def ints(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated whole numbers, got {text!r}") from None


def write_json(path: str | None, data: dict) -> None:
    """To `path`, or to stdout when no path is given."""
    text = json.dumps(data, indent=2, sort_keys=True, default=float)
    if path:
        Path(path).write_text(text + "\n")
    else:
        click.echo(text)
