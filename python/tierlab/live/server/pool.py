"""A resizable pool of tokens — worker threads or DB connections — whose waiters are
served FIFO or by priority (cross-tier priority, CTP) and give up after a timeout.
The live counterpart of the simulator's pools, observed the same way (per monitoring
window: busy, busy_max, queued, rejected, handing_off; docs/trace.md), written once and used for
both the thread and the connection pool."""

from __future__ import annotations

import heapq
import itertools
import threading
import time

from .windows import Counts, Level

# What a pool counts per window besides its levels (the trace summary's pool fields).
EVENTS = ("acquired", "waited", "timed_out", "rejected")


class PoolRejected(Exception):
    """No token for this request: the wait timed out or there was no room to wait. The
    request is rejected (HTTP 503)."""

    def __init__(self, pool: str, reason: str):
        super().__init__(f"no {pool} token: {reason}")
        self.pool = pool


class TokenPool:
    """`size` tokens. `acquire(priority)` waits its turn: lowest priority value first,
    FIFO within a priority (all 0: plain FIFO), for at most `timeout` seconds; with
    `max_queue` waiters already, a request is rejected at once. `resize` takes effect
    at once for waiters; tokens held beyond a smaller size are not taken back, only
    not reissued."""

    def __init__(self, name: str, size: int, timeout: float, max_queue: int | None = None, window: float = 0.1):
        if size < 1:
            raise ValueError(f"{name}: size must be ≥ 1, got {size}")
        self.name, self.size, self.timeout, self.max_queue = name, size, timeout, max_queue
        self.busy = 0
        self._lock = threading.Lock()
        # Heap of (priority, ticket, condition): each waiter sleeps on a condition of its
        # own (sharing the pool's lock), so a freed token wakes the head alone — not
        # every waiter, who would all wake, contend for the lock and the GIL, and sleep
        # again (with W waiters, each handoff cost O(W) wake-ups before the head ran).
        self._waiters: list = []
        self._tickets = itertools.count()
        self.rejected = 0
        self.acquired = 0
        self.observe(time.monotonic(), window)

    def observe(self, origin: float, window: float) -> None:
        """Start the per-window observation afresh at `origin` (monotonic seconds)."""
        with self._lock:
            self._busy = Level(origin, window, self.busy)
            self._queued = Level(origin, window, len(self._waiters))
            self._handing_off = Level(origin, window, self._promised())
            self._events = {e: Counts(origin, window) for e in EVENTS}

    def _promised(self) -> int:
        """Tokens free while requests wait: no one takes a free token past a waiter, so
        each is being handed to one, woken and yet to take it."""
        return max(0, min(self.size - self.busy, len(self._waiters)))

    def _levels(self, now: float) -> None:
        self._busy.set(now, self.busy)
        self._queued.set(now, len(self._waiters))
        self._handing_off.set(now, self._promised())

    def _reject(self, now: float, reason: str, timed_out: bool) -> PoolRejected:
        self.rejected += 1
        self._events["rejected"].add(now)
        if timed_out:
            self._events["timed_out"].add(now)
        return PoolRejected(self.name, reason)

    def acquire(self, priority: int = 0, timeout: float | None = None) -> None:
        timeout = self.timeout if timeout is None else timeout
        with self._lock:
            now = time.monotonic()
            if self.busy < self.size and not self._waiters:
                self._grant(now)
                return
            if self.max_queue is not None and len(self._waiters) >= self.max_queue:
                raise self._reject(now, f"{self.max_queue} already waiting", timed_out=False)
            entry = (priority, next(self._tickets), threading.Condition(self._lock))
            heapq.heappush(self._waiters, entry)
            self._events["waited"].add(now)
            self._levels(now)
            deadline = now + timeout
            while not (self.busy < self.size and self._waiters[0] is entry):
                left = deadline - time.monotonic()
                if left <= 0:
                    self._waiters.remove(entry)
                    heapq.heapify(self._waiters)
                    now = time.monotonic()
                    self._levels(now)
                    self._wake_head()  # the next in line may now be first
                    raise self._reject(now, f"waited {timeout:.3f} s", timed_out=True)
                entry[2].wait(left)
            heapq.heappop(self._waiters)
            self._grant(time.monotonic())
            self._wake_head()  # the next waiter may fit too (after a resize)

    def _wake_head(self) -> None:
        """Wake the first waiter if a token is free (the caller holds the lock); it
        wakes the next one when it has taken its token, if another is free."""
        if self._waiters and self.busy < self.size:
            self._waiters[0][2].notify()

    def _grant(self, now: float) -> None:
        self.busy += 1
        self.acquired += 1
        self._events["acquired"].add(now)
        self._levels(now)

    def release(self) -> None:
        with self._lock:
            self.busy -= 1
            self._levels(time.monotonic())
            self._wake_head()

    def resize(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"{self.name}: size must be ≥ 1, got {size}")
        with self._lock:
            self.size = size
            self._levels(time.monotonic())
            self._wake_head()

    def sample(self) -> dict:
        """The pool now, and its counters since it was made."""
        with self._lock:
            return {
                "size": self.size,
                "busy": self.busy,
                "queued": len(self._waiters),
                "rejected": self.rejected,
                "acquired": self.acquired,
                "timeout": self.timeout,
                "max_queue": self.max_queue,
            }

    def windows(self, n: int) -> dict[str, list[float]]:
        """The first `n` windows of the observation: busy, queued and handing_off as
        integrals (token-seconds), busy_max, and the EVENTS counts."""
        with self._lock:
            now = time.monotonic()
            busy, busy_max = self._busy.windows(now, n)
            queued, _ = self._queued.windows(now, n)
            handing_off, _ = self._handing_off.windows(now, n)
            return {"busy": busy, "busy_max": busy_max, "queued": queued, "handing_off": handing_off, **{e: c.windows(n) for e, c in self._events.items()}}
