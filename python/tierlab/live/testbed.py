"""A model executed on the running testbed (`Testbed.run`): the model's pools set on the
servers, then one measured load — the load generator's client view joined, request by
request, with the middleware's phase records, the server's per-window observation and
the resource monitor's series, in the simulator's trace schema. The processes are
`lifecycle`'s; the endpoints `admin`'s."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..model import LoadedModel
from ..model.pools import PoolSetting
from ..run.interrupt import RunInterrupted
from ..trace import Trace
from ..trace.join import join_server_records
from ..trace.schema import StationSummary, TierSummary
from . import connections, cpu_budget, statements
from .admin import Admin, ProxyAdmin, ServerGone
from .decisions import control_during, dispatch_over_run, read_decisions
from .lifecycle import down, free_ports, postmaster_pidfile, status, up
from .loadgen import generate_load
from .mapping import Mapping
from .monitor import Monitor, Role
from .observed import Period, server_series, server_summary, station_summary
from .server.bookstore import Database
from .server.bookstore.data import restore

WARM_UP_S = 30.0  # `Testbed.warm_up`: at 40% of the JVM's capacity, its repeats' CPU from the second run on


class Testbed:
    """A running testbed (from `status()`), to execute models on: one bookstore, or a
    cluster of them behind proxies (`cluster.up_cluster`)."""

    def __init__(self, workdir: str | Path = ".tierlab/live"):
        state = status(workdir)
        if state is None:
            raise InputError("the testbed is not up; start it with `tierlab live up`")
        self.state, self.admin = state, Admin(state.workdir, state.admin_port)
        self.admins = [Admin(state.workdir, m["admin_port"]) for m in state.servers] or [self.admin]
        self.proxies = [ProxyAdmin(state.workdir, m["admin_port"]) for m in state.proxies]

    @classmethod
    @contextmanager
    def started(cls, workdir: str | Path, **options: Any) -> Iterator[Testbed]:
        """A testbed of its own for the duration of the block — the one way tests,
        studies and benchmarks start one: `up(workdir, **options)` on free ports (unless
        `port` and `admin_port` are given) and quietly, stopped however the block ends."""
        port, admin_port = free_ports(2)
        defaults: dict[str, Any] = {"port": port, "admin_port": admin_port, "log": lambda *_: None}
        options = defaults | options
        up(workdir, **options)
        try:
            yield cls(workdir)
        finally:
            down(workdir)

    def server_pids(self) -> list[int]:
        """The app tier's servers' processes, in the order of `admins`."""
        return [m["pid"] for m in self.state.servers] or [self.state.pid]

    def _pids(self, app: str, db: str) -> dict[Role, int]:
        """The monitored processes: each server of the app tier (a cluster's as (tier,
        index)) and the database's."""
        pids: dict[Role, int] = {(app, k): pid for k, pid in enumerate(self.server_pids())} if self.state.servers else {app: self.state.pid}
        if self.state.kind == "postgres":
            pidfile = postmaster_pidfile(Path(self.state.workdir))
            if pidfile.exists():
                pids[db] = int(pidfile.read_text().split()[0])
        return pids

    def wait_idle(self, within: float = 30.0) -> dict:
        """Wait until no request holds or waits for a thread or a connection on any
        server (requests the client abandoned at the end still run); the (first)
        server's metrics then."""
        deadline = time.monotonic() + within
        first: dict = {}
        for admin in self.admins:
            while True:
                m = admin.metrics()
                if all(p["busy"] == 0 and p["queued"] == 0 for p in m["pools"].values()) or time.monotonic() > deadline:
                    first = first or m
                    break
                time.sleep(0.1)
        return first

    def apply(self, model: LoadedModel, tier: str | None = None) -> PoolSetting:
        """Set the servers' pools from the model's tier that has one threads and one
        connections pool (or `tier`): sizes, wait timeouts (none in the model: a day),
        queue bounds, caching, and for `queue: priority` pools the request types'
        priorities (CTP). A pool's `retransmit` is the kernel's accept backlog, which a
        live server has of its own: it is not set."""
        loaded = model
        setting = PoolSetting.find(loaded, tier)
        spec = loaded.spec.tiers[setting.tier].pools
        ranks = {name: r.priority for name, r in loaded.spec.requests.items()}

        def pool(name: str) -> dict:
            p = spec[name]
            return {
                "size": p.size,
                "timeout": p.timeout if p.timeout is not None else 24 * 3600.0,
                "max_queue": p.max_queue,
                "priorities": ranks if p.queue == "priority" else {},
            }

        for admin in self.admins:
            admin.configure({"threads": pool(setting.threads), "connections": pool(setting.connections) | {"caching": spec[setting.connections].caching}})
        return setting

    def restore(self) -> dict[str, int]:
        """The data as populated (`data.restore`) and the servers' key counters forgotten;
        the rows deleted by table. Every run starts so: a run adds carts and orders, and
        the database grown by the runs before costs each request more — the JVM
        bookstore's CPU per request rose 32% between two runs of one study four hours
        apart on one grown database (twin_java_budget_quick, 2026-11-28), its orders 20
        times the populated ones — so that no two runs measured the same server."""
        deleted = restore(Database(self.state.db))
        for admin in self.admins:
            admin.forget_keys()
        return deleted

    def warm_up(self, model: LoadedModel, mapping: Mapping, seconds: float = WARM_UP_S) -> bool:
        """On the JVM server, one run of `model` for `seconds` whose trace is dropped:
        the JVM compiles its hot code under its first load, and its first run after a
        start cost 2.3× the CPU of the same run repeated (10.8 against 4.6 CPU-seconds,
        investigations/twin/results/quota_period), which a study must not score. The
        Python server compiles nothing: no run. True if it ran."""
        if self.state.server != "java":
            return False
        self.run(model.with_changes({"run.duration": seconds, "run.warmup": 0.0}), mapping)
        return True

    def run(self, model: LoadedModel, mapping: Mapping, tier: str | None = None, **load_args) -> Trace:
        """Execute the model on the testbed: its pools set on the servers (`apply`),
        then one load (`generate_load`'s arguments) with the servers observed and the
        resource monitor on. Returns the trace in the simulator's schema; Ctrl-C raises
        RunInterrupted with what was measured until then, the servers' side joined.

        On a cluster session s enters through proxy s mod P; each request's
        `<tier>.server` is the server that recorded it, `<tier>.migrated` the proxy's
        decision, and `summary.tiers.<tier>.dispatch` the proxies' counts over the run.

        Nothing measured is lost: if a server ends during the run, the client's view
        (its failures counted) is still returned, without that server's phase columns
        and series, and `summary.missing` says what is absent and why."""
        loaded = model
        if self.state.tier is not None and loaded.spec.tiers[self.state.tier].servers != len(self.admins):
            raise InputError(
                f"tiers.{self.state.tier}.servers is {loaded.spec.tiers[self.state.tier].servers} but the cluster up has {len(self.admins)}; "
                "run `tierlab live down` and `tierlab live up --model` with this model"
            )
        setting = self.apply(loaded, tier)
        names = list(loaded.spec.tiers)
        app = setting.tier
        db = names[names.index(app) + 1] if names.index(app) + 1 < len(names) else "db"
        # Requests the client abandoned when an earlier run ended may still be running:
        # let them finish before draining, or their records would join this run's by id.
        self.wait_idle()
        for admin in self.admins:
            admin.drain()
        self.restore()
        # The load generator numbers sessions from 1 in every run: without this, a run's
        # session 1 would find the last run's session 1 at home on some server.
        for a in [*self.proxies, *self.admins]:
            a.forget_sessions()
        marks = [(Path(m["decisions"]).stat().st_size, p.summary()) for m, p in zip(self.state.proxies, self.proxies)]
        window = loaded.spec.run.window
        # The sizes at the start: where a `tierlab control` beside the run decides, its
        # series starts from them (control_during).
        initial = {kind: p["size"] for kind, p in self.admins[0].metrics()["pools"].items()}
        origin = time.monotonic()
        for admin in self.admins:
            admin.observe(origin, window)
        pids = self._pids(app, db)
        database = Database(self.state.db) if self.state.kind == "postgres" else None
        unstated = statements.reset(database) if database is not None else None
        stopped: KeyboardInterrupt | None = None
        throttled_before = cpu_budget.throttled(self.state.cgroups)
        pinned = [c for cpus in self.state.pinned.values() for c in cpus]
        cores = {tier: self.state.pinned.get(role, []) for role, tier in (("app", app), ("db", db))}
        with cpu_budget.kept_off(pinned), Monitor(pids, window, origin, pinned=cores) as mon:
            try:
                trace = generate_load(loaded, mapping, target=self.state.target, also=self.state.targets()[1:], **load_args)
            except RunInterrupted as e:  # Ctrl-C: the server's side of what was measured is still joined
                trace, stopped = e.result, e
        ends = [p.summary() for p in self.proxies]  # the run's counts end with its load, not after the collection
        throttling = {role: t - throttled_before[role] for role, t in cpu_budget.throttled(self.state.cgroups).items() if role in throttled_before}
        s = trace.summary
        period = Period(window, s["warmup"], s["elapsed"] or 0.0)
        missing = mon.missing()
        servers: list[tuple[pd.DataFrame, dict, dict] | None] = []
        for k, admin in enumerate(self.admins):
            name = f"{app}[{k}]" if self.state.servers else app
            try:
                servers.append(self._collect(admin, origin, period))
                continue
            except ServerGone as e:
                ended = mon.ended.get((app, k) if self.state.servers else app)
                why = f"the server (pid {pids.get((app, k), self.state.pid)}) ended at t ≈ {ended:.1f} s" if ended is not None else str(e)
            except KeyboardInterrupt as e:  # a second Ctrl-C while collecting: keep the client's view
                stopped, why = stopped or e, "Ctrl-C while collecting them"
            missing |= {f"{name}.phases": f"{why}; its phase records were lost with it", f"{name}.series": f"{why}; its windows were lost with it"}
            servers.append(None)
        if database is not None:
            trace.statements, unread = statements.read(database) if unstated is None else (None, unstated)
            missing |= {f"{db}.statements": unread} if unread is not None else {}
        monitored = mon.frame(until=period.elapsed)
        pool_names = {"threads": setting.threads, "connections": setting.connections}
        sizes = (
            [cpu_budget.series(self.state.cpu, {"app": app, "db": db}, throttling, period.elapsed, self.state.pinned)] if self.state.cpu else []
        )  # the tiers' sizes, for the twin: CPU budgets, and the clients' connections
        clients = self.state.client_connections
        sizes += [connections.series(app, clients)] if clients is not None else []
        control, control_series, unmerged = control_during(self.state.workdir, origin, period, app, initial)
        missing |= unmerged
        parts = [
            trace.timeseries,
            monitored,
            *sizes,
            *(server_series(app, sv[1], pool_names, period, k) for k, sv in enumerate(servers) if sv is not None),
            *control_series,
        ]
        trace.timeseries = pd.concat(parts, ignore_index=True)
        for c in ("tier", "resource", "metric"):
            trace.timeseries[c] = trace.timeseries[c].astype("category")
        tiers: dict[str, TierSummary] = {}
        for position, name in enumerate(dict.fromkeys(r[0] if isinstance(r, tuple) else r for r in pids)):
            if name == app:
                summaries = [
                    server_summary(sv[1] if sv else None, sv[2] if sv else {}, pool_names, _cpu_station(monitored, app, period, k), period)
                    for k, sv in enumerate(servers)
                ]
            else:
                summaries = [server_summary(None, {}, pool_names, _cpu_station(monitored, name, period, 0), period)]
            tiers[name] = {"position": names.index(name) if name in names else position, "servers": summaries, "dispatch": None}
        decisions = None
        if self.proxies:
            decisions = self._decisions(marks)
            measured = None if trace.requests is None else trace.requests["id"]  # sent after the warm-up
            tiers[app]["dispatch"] = dispatch_over_run([m[1] for m in marks], ends, decisions, measured)
        s["tiers"] = tiers
        s["missing"] = dict(sorted(missing.items()))
        if control is not None:
            s["control"] = control
        if trace.requests is not None:
            records = [sv[0].assign(server=k) for k, sv in enumerate(servers) if sv is not None]
            if records:
                trace.requests = join_server_records(trace.requests, pd.concat(records, ignore_index=True), app)
            if decisions is not None:
                migrated = decisions.dropna(subset=["request"]).drop_duplicates("request").set_index("request")["migrated"]
                trace.requests[f"{app}.migrated"] = migrated.reindex(trace.requests["id"].to_numpy()).fillna(False).to_numpy(dtype=np.uint8)
        if stopped is not None:
            raise RunInterrupted(trace) from stopped
        return trace

    def _decisions(self, marks: list[tuple[int, dict]], within: float = 10.0) -> pd.DataFrame:
        """The proxies' decision lines of the run just ended: those after each log's
        mark, once every request the proxy took since has its line (the log is written
        as requests end)."""
        frames = []
        deadline = time.monotonic() + within
        for (offset, before), member, proxy in zip(marks, self.state.proxies, self.proxies):
            while True:
                lines = read_decisions(member["decisions"], offset)
                taken = proxy.summary()["proxy"]["requests"] - before["proxy"]["requests"]
                if len(lines) >= taken or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            frames.append(lines)
        return pd.concat(frames, ignore_index=True)

    def _collect(self, admin: Admin, origin: float, period: Period) -> tuple[pd.DataFrame, dict, dict]:
        """A server's side of the run just ended: its phase records (once its last
        requests finish), its first `period.n` windows, and its pools' sizes."""
        self.wait_idle()
        records, windows = admin.drain(period.n)
        if not records.empty:  # a request of an earlier run that outlived wait_idle would join by id
            records = records[records.start >= origin]
        return records, windows, {p: v["size"] for p, v in admin.metrics()["pools"].items()}


def _cpu_station(monitored: pd.DataFrame, tier: str, period: Period, server: int = 0) -> dict[str, StationSummary]:
    u = monitored[(monitored.tier == tier) & (monitored.server == server) & (monitored.resource == "cpu") & (monitored.metric == "utilization")]
    return {"cpu": station_summary(u.set_index("t")["value"], period)} if len(u) else {}


class LiveRunner:
    """Executes a sweep's runs on the testbed instead of the simulator (`sweep(...,
    runner=)`, hence `profile_grid` and `max_sustainable_rate`): `Testbed.run` with
    each run's model — the same path as `tierlab live run`."""

    def __init__(self, bed: Testbed, mapping: Mapping, tier: str | None = None):
        self.bed, self.mapping, self.tier = bed, mapping, tier

    def __call__(self, model: LoadedModel) -> Trace:
        trace = self.bed.run(model, self.mapping, self.tier)
        lost = {what: why for what, why in trace.summary["missing"].items() if not what.endswith((".monitor", ".statements"))}
        if lost:  # the server is gone: the rest of the sweep would measure nothing (a monitor's or a cross-check's gap is no reason to stop)
            raise ServerGone(f"a run lost {'; '.join(f'{k}: {v}' for k, v in lost.items())}; start the testbed again (`tierlab live up`)")
        return trace
