"""Per-window observation on the live server, the way the engine observes a simulated
one (`crates/sim`'s TimeAvg and counters): a piecewise-constant level (busy tokens,
waiters, requests in progress) integrated over each monitoring window together with
its maximum there, and events counted per window. Windows are `window` seconds long
from an origin on the monotonic clock, which every process of the machine shares, so
the testbed aligns them with the load generator's and the monitor's."""

from __future__ import annotations

import math


class Level:
    """A level's per-window integral (value × seconds) and maximum. Not thread-safe:
    its owner updates it under its own lock."""

    def __init__(self, origin: float, window: float, value: float = 0.0):
        self.origin, self.window = origin, window
        self.value, self.last = value, origin
        self.area: list[float] = []
        self.peak: list[float] = []

    def _index(self, t: float) -> int:
        return max(0, math.floor((t - self.origin) / self.window))

    def _grow(self, i: int) -> None:
        while len(self.area) <= i:
            # A window starts at the level it inherits.
            self.area.append(0.0)
            self.peak.append(self.value)

    def set(self, now: float, value: float) -> None:
        """The level becomes `value` at `now` (integrating the old value up to now)."""
        i, t = self._index(self.last), self.last
        self._grow(self._index(now))
        while t < now:
            end = min(now, self.origin + (i + 1) * self.window)
            self.area[i] += self.value * (end - t)
            t, i = end, i + 1
        self.last, self.value = max(self.last, now), value
        k = self._index(now)
        self.peak[k] = max(self.peak[k], value)

    def windows(self, now: float, n: int) -> tuple[list[float], list[float]]:
        """(integral, maximum) of each of the first `n` windows, integrated up to `now`."""
        self.set(now, self.value)
        self._grow(n - 1)
        return self.area[:n], self.peak[:n]


class Counts:
    """Events per window."""

    def __init__(self, origin: float, window: float):
        self.origin, self.window = origin, window
        self.counts: list[float] = []

    def add(self, now: float, amount: float = 1.0) -> None:
        i = max(0, math.floor((now - self.origin) / self.window))
        if len(self.counts) <= i:
            self.counts.extend([0.0] * (i + 1 - len(self.counts)))
        self.counts[i] += amount

    def windows(self, n: int) -> list[float]:
        return (self.counts + [0.0] * n)[:n]
