"""Resource monitor: samples the application's and the database's processes every
window (100 ms) — CPU user and system (cores busy), disk operations, open TCP sockets,
processes and threads — into trace-schema time series rows (tier = the process's
role, resource = "", metrics `cpu_user`, `cpu_system`, `disk_ops`, `sockets`,
`processes`, `threads`), and the process's CPU as a station: resource `cpu`, metric
`utilization` = cores busy / the machine's cores, as a simulated CPU station's. For a
tier pinned to cores of its own (`live up --cpu app=1`) also those cores' own account,
`cpu_pinned`: cores busy with anything — the process, and the kernel's work for it that
its CPU time does not count (a socket's softirq, with IRQ time accounted apart). A
process that ends during the run (killed, crashed) is noted with the time; its series
stop there.

Every second it also records the machine itself (tier `machine`): the 1-minute load
average, the cores idle over the second before, all processes together (`cpu_idle`), and the
CPU time a fixed piece of Python work takes (`cpu_probe_ms`). The same work's CPU time
drifts by a third within minutes on a shared machine (investigations/twin/cpu_drift.py),
so a run's figures are read beside the speed it ran at; `cpu_idle` says which probes
were taken with every core busy, where the probe measures the contention it runs in
(analysis.machine)."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import psutil

Role = str | tuple[str, int]


def _name(role: Role) -> str:
    return f"{role[0]}[{role[1]}]" if isinstance(role, tuple) else role


METRICS = ["cpu_user", "cpu_system", "disk_ops", "sockets", "processes", "threads"]  # per process
PROBE_EVERY = 1.0  # seconds between records of the machine
PROBE_LOOPS = 20_000  # about 2 ms of work on this machine: 0.2% of a core


def probe_ms() -> float:
    """CPU milliseconds this thread spends on a fixed piece of pure-Python work (a loop
    of arithmetic and dict stores, like a request handler's): the same work takes longer
    when the machine runs slower (its clock, or a busy sibling hyperthread). CPU time,
    so waiting for a core does not count."""
    start = time.thread_time()
    table: dict[int, int] = {}
    total = 0
    for i in range(PROBE_LOOPS):
        total += i * i % 7
        table[i & 255] = total
    return (time.thread_time() - start) * 1e3


def _busy(t: Any) -> float:
    """A `psutil.cpu_times` record's busy seconds: everything but idle and waiting for a disk."""
    return t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0) + getattr(t, "steal", 0.0)


def _busy_seconds() -> float:
    """CPU seconds the machine's cores have spent busy since boot, all processes together."""
    return _busy(psutil.cpu_times())


def _core_busy() -> np.ndarray:
    """CPU seconds each core has spent busy since boot."""
    return np.array([_busy(t) for t in psutil.cpu_times(percpu=True)])


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) the process `pid` and its children have used so far,
    as the monitor counts a role's; None if it does not run."""
    procs = Monitor._tree(pid)
    total = 0.0
    for p in procs:
        try:
            cpu = p.cpu_times()
        except psutil.Error:
            continue  # ended between the listing and the read
        total += cpu.user + cpu.system
    return total if procs else None


class Monitor:
    """`roles`: tier name, or (tier, server index) for a cluster's servers → pid (its
    children are counted with it: PostgreSQL runs a process per connection). Use as a
    context manager around a run. `pinned`: tier → the CPUs pinned to it, whose own
    account each window is recorded too (`cpu_pinned`)."""

    def __init__(self, roles: dict[Role, int], window: float = 0.1, origin: float | None = None, pinned: dict[str, list[int]] | None = None):
        self.roles, self.window, self.origin = roles, window, origin
        self.pinned = {tier: cpus for tier, cpus in (pinned or {}).items() if cpus}
        self.cores = psutil.cpu_count() or 1
        self.rows: list[tuple] = []
        self.ended: dict[Role, float] = {}  # role → start of its first window without the process
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tierlab-monitor", daemon=True)

    def __enter__(self) -> Monitor:
        self.t0 = time.monotonic() if self.origin is None else self.origin
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @staticmethod
    def _tree(pid: int) -> list[psutil.Process]:
        try:
            p = psutil.Process(pid)
            if p.status() == psutil.STATUS_ZOMBIE:  # ended, not yet reaped
                return []
            return [p, *p.children(recursive=True)]
        except psutil.Error:
            return []

    def _read(self) -> dict[Role, np.ndarray]:
        """Per role whose process runs: cumulative CPU user, system, disk ops; current
        sockets, processes, threads. The sockets come from one system-wide listing, not one per process
        (PostgreSQL runs a process per connection: per-process listings made a sample
        take longer than its window)."""
        trees = {role: self._tree(pid) for role, pid in self.roles.items()}
        try:
            sockets = Counter(c.pid for c in psutil.net_connections(kind="tcp"))
        except psutil.AccessDenied:
            sockets = Counter()
        out = {}
        for role, procs in trees.items():
            if not procs:
                continue
            v = np.zeros(6)
            for p in procs:
                try:
                    with p.oneshot():
                        cpu = p.cpu_times()
                        v[0] += cpu.user
                        v[1] += cpu.system
                        try:
                            io = p.io_counters()
                            v[2] += io.read_count + io.write_count
                        except (psutil.AccessDenied, AttributeError):
                            pass
                        v[3] += sockets[p.pid]
                        v[5] += p.num_threads()
                except psutil.Error:
                    continue  # ended between the listing and the read
            v[4] = len(procs)
            out[role] = v
        return out

    def _run(self) -> None:
        """Sample at every window boundary. The rates are over the time that really
        passed since the last sample; a sample that came late (a busy machine) covers
        every window since the last one with its rates, so no window is missing."""
        last, last_window = self._read(), 0
        cores = _core_busy() if self.pinned else None
        last_t, probed = time.monotonic(), -PROBE_EVERY
        machine_busy, machine_t = _busy_seconds(), last_t
        self.ended |= {role: 0.0 for role in self.roles if role not in last}
        while not self._stop.is_set():
            self._stop.wait(max(0.0, self.t0 + (last_window + 1) * self.window - time.monotonic()))
            now, now_t = self._read(), time.monotonic()
            now_cores = _core_busy() if cores is not None else None
            window = max(last_window + 1, int((now_t - self.t0) / self.window))
            for role in last.keys() - now.keys() - self.ended.keys():
                self.ended[role] = last_window * self.window
            for role, v in now.items():
                if role not in last:
                    continue
                rates = (v[:3] - last[role][:3]) / max(now_t - last_t, 1e-6)
                for i in range(last_window, window):
                    t = i * self.window
                    tier, server = role if isinstance(role, tuple) else (role, 0)
                    for metric, value in zip(METRICS, [*rates, *v[3:]]):
                        self.rows.append((t, tier, server, "", metric, float(value)))
                    self.rows.append((t, tier, server, "cpu", "utilization", float(rates[0] + rates[1]) / self.cores))
            if cores is not None and now_cores is not None:
                rate = (now_cores - cores) / max(now_t - last_t, 1e-6)
                self.rows += [
                    (i * self.window, tier, 0, "", "cpu_pinned", float(rate[cpus].sum()))
                    for tier, cpus in self.pinned.items()
                    for i in range(last_window, window)
                ]
                cores = now_cores
            if (at := last_window * self.window) >= probed + PROBE_EVERY - 1e-9:
                busy = _busy_seconds()
                idle = self.cores - (busy - machine_busy) / max(now_t - machine_t, 1e-6)
                self.rows += [
                    (at, "machine", 0, "", "load_1m", os.getloadavg()[0]),
                    (at, "machine", 0, "", "cpu_idle", max(0.0, idle)),
                    (at, "machine", 0, "", "cpu_probe_ms", probe_ms()),
                ]
                probed, machine_busy, machine_t = at, busy, now_t
            last, last_t, last_window = now, now_t, window

    def missing(self) -> dict[str, str]:
        """What the series lack, as `summary.missing` says it: `<role>.monitor` for each
        process that ended during the run."""
        return {f"{_name(role)}.monitor": f"process {self.roles[role]} ended at t ≈ {t:.1f} s; its series stop there" for role, t in self.ended.items()}

    def frame(self, until: float | None = None) -> pd.DataFrame:
        """The rows as a trace series; `until`: only windows starting before it."""
        df = pd.DataFrame(self.rows, columns=["t", "tier", "server", "resource", "metric", "value"])
        if until is not None:
            df = df[df.t < until - 1e-9]
        for c in ("tier", "resource", "metric"):
            df[c] = df[c].astype("category")
        df["server"] = df["server"].astype(np.int32)
        return df
