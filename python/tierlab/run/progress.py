"""Progress of runs and sweeps on stderr: a live bar on a terminal or in a notebook; in
a log (stderr redirected, CI) one plain line per step — each run of a sweep, each tenth of a single
run — so a long command is never silent."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import Progress, ProgressColumn, TaskID
from rich.text import Text

STEP = 0.1
"""A single run (total 1.0) reports in a log at every tenth."""


class LineProgress:
    """The part of rich's `Progress` the runs use (add_task, update, advance), written
    as one line per step: `label: 3/20 (15%), 12 s` plus the task's fields."""

    def __init__(self, console: Console):
        self.console = console
        self.tasks: dict[TaskID, dict[str, Any]] = {}

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: float = 1.0, **fields: Any) -> TaskID:
        i = TaskID(len(self.tasks))
        self.tasks[i] = {"description": description, "total": total, "completed": 0.0, "start": time.monotonic(), "shown": (0.0, total), "fields": fields}
        return i

    def advance(self, task: TaskID, advance: float = 1.0) -> None:
        self.update(task, completed=self.tasks[task]["completed"] + advance)

    def update(self, task: TaskID, completed: float | None = None, description: str | None = None, total: float | None = None, **fields: Any) -> None:
        t = self.tasks[task]
        t["fields"].update(fields)
        if description is not None:
            t["description"] = description
        if total is not None:
            t["total"] = total
        if completed is not None:
            t["completed"] = completed
        elif total is None:
            return
        done, total = t["completed"], t["total"]
        step = STEP * total if total <= 1 else 1
        # The end is shown once, also when it comes by a lowered total (a sweep that
        # learns it needs fewer runs than it said it might).
        end = done >= total and t["shown"] != (done, total)
        if done - t["shown"][0] >= step - 1e-9 or end:
            t["shown"] = (done, total)
            self.console.print(self._line(t), markup=False, highlight=False)

    @staticmethod
    def _line(t: dict[str, Any]) -> str:
        total, done = t["total"], t["completed"]
        count = f"{done:g}/{total:g} " if total > 1 else ""
        extra = "".join(f", {v}" for v in t["fields"].values() if v)
        return f"{Text.from_markup(t['description']).plain}: {count}({done / total:.0%}), {time.monotonic() - t['start']:.0f} s{extra}"


def progress(*columns: str | ProgressColumn, console: Console, disable: bool = False) -> Progress | LineProgress:
    """A rich progress bar with `columns` on a terminal (or in a notebook), else a
    `LineProgress`; with `disable`, one that shows nothing."""
    if console.is_terminal or console.is_jupyter or disable:
        return Progress(*columns, console=console, disable=disable, transient=True)
    return LineProgress(console)
