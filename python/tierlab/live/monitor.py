"""Resource monitor: samples the application's and the database's processes every
window (100 ms) — CPU user and system (cores busy), disk operations, open TCP sockets,
processes and threads — into trace-schema time series rows (tier = the process's
role, resource = "", metrics `cpu_user`, `cpu_system`, `disk_ops`, `sockets`,
`processes`, `threads`), and the process's CPU as a station: resource `cpu`, metric
`utilization` = cores busy / the machine's cores, as a simulated CPU station's."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import psutil

METRICS = ["cpu_user", "cpu_system", "disk_ops", "sockets", "processes", "threads"]


class Monitor:
    """`roles`: tier name → pid (its children are counted with it: PostgreSQL runs a
    process per connection). Use as a context manager around a run."""

    def __init__(self, roles: dict[str, int], window: float = 0.1, origin: float | None = None):
        self.roles, self.window, self.origin = roles, window, origin
        self.cores = psutil.cpu_count() or 1
        self.rows: list[tuple] = []
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
            return [p, *p.children(recursive=True)]
        except psutil.Error:
            return []

    def _read(self, pid: int) -> np.ndarray:
        """Cumulative CPU user, system, disk ops; current sockets, processes, threads."""
        out = np.zeros(6)
        procs = self._tree(pid)
        for p in procs:
            try:
                with p.oneshot():
                    cpu = p.cpu_times()
                    out[0] += cpu.user
                    out[1] += cpu.system
                    try:
                        io = p.io_counters()
                        out[2] += io.read_count + io.write_count
                    except (psutil.AccessDenied, AttributeError):
                        pass
                    out[3] += len(p.net_connections(kind="tcp"))
                    out[5] += p.num_threads()
            except psutil.Error:
                continue  # ended between the listing and the read
        out[4] = len(procs)
        return out

    def _run(self) -> None:
        last = {role: self._read(pid) for role, pid in self.roles.items()}
        k = 0
        while not self._stop.is_set():
            k += 1
            wake = self.t0 + k * self.window
            self._stop.wait(max(0.0, wake - time.monotonic()))
            t = (k - 1) * self.window
            for role, pid in self.roles.items():
                now = self._read(pid)
                rates = (now[:3] - last[role][:3]) / self.window
                last[role] = now
                for metric, value in zip(METRICS, [*rates, *now[3:]]):
                    self.rows.append((t, role, 0, "", metric, float(value)))
                self.rows.append((t, role, 0, "cpu", "utilization", float(rates[0] + rates[1]) / self.cores))

    def frame(self, until: float | None = None) -> pd.DataFrame:
        """The rows as a trace series; `until`: only windows starting before it."""
        df = pd.DataFrame(self.rows, columns=["t", "tier", "server", "resource", "metric", "value"])
        if until is not None:
            df = df[df.t < until - 1e-9]
        for c in ("tier", "resource", "metric"):
            df[c] = df[c].astype("category")
        df["server"] = df["server"].astype(np.int32)
        return df
