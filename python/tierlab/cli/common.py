"""What every command shares: the consoles, the run progress bar, option lists
applied to several commands, and small parsers."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..errors import InputError

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
