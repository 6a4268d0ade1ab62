"""The live testbed's lifecycle: `up` starts the database and the bookstore in the
background (state in `.tierlab/live/` under the working directory), `down` stops
them, and `Testbed.run` executes a model on it: the model's pools set on the server,
then one measured load — the load generator's client view joined, request by
request, with the middleware's phase records, the server's per-window observation and
the resource monitor's series, in the simulator's trace schema."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

from ..errors import InputError
from ..model import LoadedModel
from ..model.pools import PoolSetting
from ..run.interrupt import RunInterrupted
from ..trace import Trace
from ..trace.join import join_server_records
from ..trace.schema import StationSummary, TierSummary
from . import statements
from .decisions import dispatch_over_run, read_decisions
from .loadgen import generate_load
from .mapping import Mapping
from .monitor import Monitor, Role
from .observed import Period, server_series, server_summary, station_summary
from .server.bookstore import Database, populate

POSTGRES_SCRIPT = Path(__file__).with_name("postgres.sh")
REDIS_SCRIPT = Path(__file__).with_name("redis.sh")


@dataclass
class State:
    """What `up` started. The single form: one bookstore (`pid`, `port`, `admin_port`,
    `log`). The cluster form (`up_cluster`) also records every server and proxy
    (`servers`, `proxies`: pid, port, admin_port, log each; the first server is
    `pid`…), the model tier they form, and the Redis URL if sessions live there."""

    pid: int
    port: int
    admin_port: int
    db: str
    kind: str
    workdir: str
    log: str
    tier: str | None = None
    servers: list[dict] = field(default_factory=list)
    proxies: list[dict] = field(default_factory=list)
    sessions: str | None = None

    @property
    def target(self) -> str:
        return self.targets()[0]

    def targets(self) -> list[str]:
        """Where clients connect: a cluster's proxies (session s to proxy s mod P), else the bookstore."""
        return [f"127.0.0.1:{p}" for p in ([m["port"] for m in self.proxies] or [self.port])]

    def pids(self) -> list[int]:
        """Every process `up` started (each leads a process group of its own)."""
        return [self.pid, *(m["pid"] for m in self.servers[1:]), *(m["pid"] for m in self.proxies)]

    def ports(self) -> list[int]:
        if not self.servers:
            return [self.port, self.admin_port]
        return [p for m in self.servers + self.proxies for p in (m["port"], m["admin_port"])]


def _state_file(workdir: Path) -> Path:
    return workdir / "state.json"


def running(pid: int) -> bool:
    """The process exists and has not ended (a killed child of ours stays a zombie
    until reaped: ended all the same)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class ServerGone(InputError):
    """The bookstore's admin endpoint does not answer: the server ended (or never started)."""


def _free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def up(
    workdir: str | Path = ".tierlab/live",
    *,
    db: str = "sqlite",
    port: int = 8080,
    admin_port: int = 8081,
    threads: int = 20,
    connections: int = 10,
    caching: str = "transaction",
    num_items: int = 1000,
    num_ebs: int = 1,
    log=print,
    otel: str | Path | None = None,
) -> State:
    """Start the database (SQLite: a file; PostgreSQL: the project's cluster) and the
    bookstore; populate the data if this scale has not been loaded yet. `otel`: a file
    the server also exports its OpenTelemetry traces and metrics to (OTLP/JSON lines)."""
    workdir = prepare(workdir, [(port, "--port"), (admin_port, "--admin-port")])
    url = database(workdir, db, num_items, num_ebs, log)
    logfile = workdir / "server.log"
    extra = ("--otel", str(Path(otel).resolve())) if otel else ()
    pid = spawn(server_command(workdir, url, port, admin_port, threads, connections, caching, *extra), logfile)
    state = State(pid, port, admin_port, url, db, str(workdir), str(logfile))
    save(state)
    await_admin(state, [Admin(state)], logfile)
    return state


def prepare(workdir: str | Path, ports: list[tuple[int, str]]) -> Path:
    """The working folder, its token, and a check that nothing runs and the ports are free."""
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    if _state_file(workdir).exists():
        state = status(workdir)
        if state is not None:
            raise InputError(f"the testbed is already up (pid {state.pid}, {state.target}); run `tierlab live down` first")
    for p, what in ports:
        if not _free(p):
            raise InputError(f"port {p} is in use; choose another with {what}")
    token_file = workdir / "token"
    if not token_file.exists():
        token_file.write_text(secrets.token_hex(16))
        token_file.chmod(0o600)
    return workdir


def database(workdir: Path, db: str, num_items: int, num_ebs: int, log) -> str:
    """The database's URL, started (PostgreSQL) and populated if this scale is not yet."""
    if db == "sqlite":
        url = f"sqlite:///{workdir / f'bookstore-{num_items}-{num_ebs}.db'}"
    elif db == "postgres":
        url = service_script(POSTGRES_SCRIPT, "start", workdir.parent / "postgres", "PostgreSQL")
    else:
        raise InputError(f"--db must be sqlite or postgres, got {db!r}")
    marker = workdir / f"populated-{db}-{num_items}-{num_ebs}"
    if not marker.exists() or (db == "sqlite" and not Path(url.removeprefix("sqlite:///")).exists()):
        log(f"populating the bookstore ({num_items} items, {num_ebs} EBs) in {db} …")
        for other in workdir.glob(f"populated-{db}-*"):
            other.unlink()
        populate(Database(url), num_items, num_ebs)
        marker.touch()
    return url


def service_script(script: Path, command: str, folder: Path, what: str) -> str:
    """Run a service script (postgres.sh, redis.sh); its last line is the URL."""
    out = subprocess.run(["bash", str(script), command, str(folder)], capture_output=True, text=True)
    if out.returncode != 0:
        raise InputError(f"{what} did not start:\n{out.stderr.strip()}")
    return out.stdout.strip().splitlines()[-1]


def server_command(workdir: Path, url: str, port: int, admin_port: int, threads: int, connections: int, caching: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tierlab.live.server.serve",
        "--db",
        url,
        "--port",
        str(port),
        "--admin-port",
        str(admin_port),
        "--token-file",
        str(workdir / "token"),
        "--threads",
        str(threads),
        "--connections",
        str(connections),
        "--caching",
        caching,
        *extra,
    ]


def spawn(cmd: list[str], logfile: Path) -> int:
    """Start `cmd` in the background, in a process group of its own (so `down` stops
    its children too), its output appended to `logfile`."""
    with open(logfile, "ab") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True).pid


def save(state: State) -> None:
    _state_file(Path(state.workdir)).write_text(json.dumps(asdict(state), indent=2))


def await_admin(state: State, admins: list[Admin], logfile: Path, within: float = 20.0) -> None:
    """Wait until every admin endpoint answers; if one does not in time or a process
    ends, stop everything and say why, with the end of that process's log (or `logfile`)."""
    deadline = time.monotonic() + within
    for admin in admins:
        while True:
            try:
                admin.ping()
                break
            except ServerGone:
                ended = [p for p in state.pids() if not running(p)]
                if ended or time.monotonic() > deadline:
                    down(state.workdir)
                    log = next((Path(m["log"]) for m in state.servers + state.proxies if m["pid"] in ended), logfile)
                    tail = "\n".join(log.read_text().splitlines()[-15:])
                    raise InputError(f"{admin.base} did not start; the end of {log}:\n{tail}") from None
                time.sleep(0.2)


def status(workdir: str | Path = ".tierlab/live") -> State | None:
    """The running testbed, or None."""
    f = _state_file(Path(workdir).resolve())
    if not f.exists():
        return None
    state = State(**json.loads(f.read_text()))
    return state if running(state.pid) else None


def down(workdir: str | Path = ".tierlab/live") -> bool:
    """Stop what `up` started; False if nothing was running."""
    workdir = Path(workdir).resolve()
    f = _state_file(workdir)
    if not f.exists():
        return False
    state = State(**json.loads(f.read_text()))
    # Proxies first (they write their summaries on SIGTERM), then the servers.
    for pid in reversed(state.pids()):
        _stop(pid)
    if state.kind == "postgres":
        subprocess.run(["bash", str(POSTGRES_SCRIPT), "stop", str(workdir.parent / "postgres")], capture_output=True)
    if state.sessions is not None:
        subprocess.run(["bash", str(REDIS_SCRIPT), "stop", str(workdir / "redis")], capture_output=True)
    f.unlink()
    return True


def _stop(pid: int) -> None:
    """SIGTERM to the process's group, SIGKILL after 5 s."""
    try:
        os.killpg(pid, signal.SIGTERM)
        for _ in range(100):
            if not running(pid):
                return
            time.sleep(0.05)
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Admin:
    """The bookstore's loopback admin endpoint (`admin_port`: a cluster's other servers')."""

    def __init__(self, state: State, admin_port: int | None = None):
        self.base = f"http://127.0.0.1:{admin_port or state.admin_port}"
        self.token = (Path(state.workdir) / "token").read_text().strip()

    def ping(self) -> None:
        self.metrics()

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        req = urllib.request.Request(
            self.base + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise InputError(f"admin {path}: {json.loads(e.read()).get('error', e.reason)}") from None
        except OSError as e:  # refused, reset, timed out: the server is not there
            reason = getattr(e, "reason", e)
            raise ServerGone(f"the bookstore's admin endpoint {self.base} does not answer ({reason}); is the testbed up? (`tierlab live status`)") from None

    def metrics(self) -> dict:
        return self._call("GET", "/metrics")

    def configure(self, settings: dict) -> dict:
        """Set pools: {"threads": {"size": …, …}, "connections": {…}} (see `serve`)."""
        return self._call("POST", "/config", settings)

    def forget_sessions(self) -> None:
        """Every session's state dropped (the bookstore's, the proxy's homes)."""
        self._call("POST", "/sessions/forget", {})

    def observe(self, origin: float, window: float) -> None:
        self._call("POST", "/observe", {"origin": origin, "window": window})

    def drain(self, windows: int = 0) -> tuple[pd.DataFrame, dict]:
        """The phase records since the last drain, and the observation's first windows."""
        out = self._call("POST", "/drain", {"windows": windows})
        return pd.DataFrame(out["records"]), out["windows"]


class ProxyAdmin(Admin):
    """A cluster proxy's loopback admin endpoint (crates/proxy/README.md)."""

    def ping(self) -> None:
        self.summary()

    def summary(self) -> dict:
        """`{"dispatch": DispatchSummary, "proxy": live-only counts}` since it started."""
        return self._call("GET", "/summary")


class Testbed:
    """A running testbed (from `status()`), to execute models on: one bookstore, or a
    cluster of them behind proxies (`cluster.up_cluster`)."""

    def __init__(self, workdir: str | Path = ".tierlab/live"):
        state = status(workdir)
        if state is None:
            raise InputError("the testbed is not up; start it with `tierlab live up`")
        self.state, self.admin = state, Admin(state)
        self.admins = [Admin(state, m["admin_port"]) for m in state.servers] or [self.admin]
        self.proxies = [ProxyAdmin(state, m["admin_port"]) for m in state.proxies]

    def _pids(self, app: str, db: str) -> dict[Role, int]:
        """The monitored processes: each server of the app tier (a cluster's as (tier,
        index)) and the database's."""
        pids: dict[Role, int] = {(app, k): m["pid"] for k, m in enumerate(self.state.servers)} or {app: self.state.pid}
        if self.state.kind == "postgres":
            pidfile = Path(self.state.workdir).parent / "postgres" / "data" / "postmaster.pid"
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
        # The load generator numbers sessions from 1 in every run: without this, a run's
        # session 1 would find the last run's session 1 at home on some server.
        for a in [*self.proxies, *self.admins]:
            a.forget_sessions()
        marks = [(Path(m["decisions"]).stat().st_size, p.summary()) for m, p in zip(self.state.proxies, self.proxies)]
        window = loaded.spec.run.window
        origin = time.monotonic()
        for admin in self.admins:
            admin.observe(origin, window)
        pids = self._pids(app, db)
        database = Database(self.state.db) if self.state.kind == "postgres" else None
        unstated = statements.reset(database) if database is not None else None
        stopped: KeyboardInterrupt | None = None
        with Monitor(pids, window, origin) as mon:
            try:
                trace = generate_load(loaded, mapping, target=self.state.target, also=self.state.targets()[1:], **load_args)
            except RunInterrupted as e:  # Ctrl-C: the server's side of what was measured is still joined
                trace, stopped = e.result, e
        ends = [p.summary() for p in self.proxies]  # the run's counts end with its load, not after the collection
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
        parts = [trace.timeseries, monitored, *(server_series(app, sv[1], pool_names, period, k) for k, sv in enumerate(servers) if sv is not None)]
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
