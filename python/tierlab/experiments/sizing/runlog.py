"""Progress of a sizing experiment, one plain line per run as it ends (readable in a
log file as on a terminal): the step, the point (M, N), the offered rate, the outcome,
and how many runs at most remain. A live system runs one run after another for
minutes; without these lines it would say nothing until the end."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...model.pools import PoolSetting
from ...run.sweep import Run

RATE = "workload.population.session_rate"


@dataclass
class RunLog:
    """`log` takes each line; `remaining` is the most runs the experiment still needs
    (it shrinks as runs end and as steps turn out not to be needed: `bound`)."""

    log: Callable[[str], None]
    setting: PoolSetting
    remaining: int
    seconds: float  # each run's length, warm-up included
    ran: int = 0

    def start(self, what: str) -> None:
        self.log(f"{what}: at most {_runs(self.remaining)} of {self.seconds:g} s (≤ {self.remaining * self.seconds / 60:.1f} min)")

    def bound(self, remaining: int) -> None:
        self.remaining = remaining

    def step(self, what: str, runs: list[Run], outcome: Callable[[Any], str]) -> Callable[[int, Any], None]:
        """The sweep's `on_result` for `runs`, the step `what` of the experiment."""
        done = 0

        def report(i: int, value: Any) -> None:
            nonlocal done
            done += 1
            self.ran_one(f"{what}, run {done}/{len(runs)}", runs[i], outcome(value))

        return report

    def ran_one(self, what: str, run: Run, outcome: str) -> None:
        """A run of the step `what` ended with `outcome`."""
        self.ran += 1
        self.remaining = max(0, self.remaining - 1)
        self.log(f"{what}: {self.describe(run)}: {outcome}; at most {_runs(self.remaining)} more")

    def end(self, what: str) -> None:
        self.log(f"{what} after {_runs(self.ran)}")

    def describe(self, run: Run) -> str:
        pools = f"tiers.{self.setting.tier}.pools"
        c = run.changes
        rate = f" at {c[RATE]:.3f} sessions/s" if RATE in c else ""
        return f"M={c.get(f'{pools}.{self.setting.threads}.size', '·')} N={c.get(f'{pools}.{self.setting.connections}.size', '·')}{rate}, seed {run.seed}"


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"
