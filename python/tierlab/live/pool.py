"""A resizable pool of tokens — worker threads or DB connections — whose waiters are
served FIFO or by priority (cross-tier priority, CTP) and give up after a timeout.
The live counterpart of the simulator's pools (docs/trace.md: busy, queued,
rejected), written once and used for both the thread and the connection pool."""

from __future__ import annotations

import heapq
import itertools
import threading
import time


class PoolTimeout(Exception):
    """No token within the timeout: the request is rejected (HTTP 503)."""

    def __init__(self, pool: str, waited: float):
        super().__init__(f"no {pool} token within {waited:.3f} s")
        self.pool = pool


class TokenPool:
    """`size` tokens. `acquire(priority)` waits its turn: lowest priority value first,
    FIFO within a priority (all 0: plain FIFO). `resize` takes effect at once for
    waiters; tokens held beyond a smaller size are not taken back, only not reissued."""

    def __init__(self, name: str, size: int, timeout: float):
        if size < 1:
            raise ValueError(f"{name}: size must be ≥ 1, got {size}")
        self.name, self.size, self.timeout = name, size, timeout
        self.busy = 0
        self._cv = threading.Condition()
        self._waiters: list = []  # heap of (priority, ticket)
        self._tickets = itertools.count()
        self.rejected = 0
        self.acquired = 0
        self._area = 0.0  # ∫ busy dt and ∫ queued dt, for time averages
        self._qarea = 0.0
        self._since = time.monotonic()

    def _account(self) -> None:
        now = time.monotonic()
        self._area += self.busy * (now - self._since)
        self._qarea += len(self._waiters) * (now - self._since)
        self._since = now

    def acquire(self, priority: int = 0, timeout: float | None = None) -> None:
        timeout = self.timeout if timeout is None else timeout
        with self._cv:
            self._account()
            entry = (priority, next(self._tickets))
            heapq.heappush(self._waiters, entry)
            deadline = time.monotonic() + timeout
            while not (self.busy < self.size and self._waiters[0] == entry):
                left = deadline - time.monotonic()
                if left <= 0:
                    self._account()
                    self._waiters.remove(entry)
                    heapq.heapify(self._waiters)
                    self.rejected += 1
                    self._cv.notify_all()  # the next in line may now be first
                    raise PoolTimeout(self.name, timeout)
                self._cv.wait(left)
            self._account()
            heapq.heappop(self._waiters)
            self.busy += 1
            self.acquired += 1
            self._cv.notify_all()  # the next waiter may fit too (after a resize)

    def release(self) -> None:
        with self._cv:
            self._account()
            self.busy -= 1
            self._cv.notify_all()

    def resize(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"{self.name}: size must be ≥ 1, got {size}")
        with self._cv:
            self.size = size
            self._cv.notify_all()

    def sample(self) -> dict:
        """Counters and the time integrals so far (a sampler differences them)."""
        with self._cv:
            self._account()
            return {"size": self.size, "busy": self.busy, "queued": len(self._waiters), "rejected": self.rejected,
                    "acquired": self.acquired, "busy_area": self._area, "queued_area": self._qarea}
