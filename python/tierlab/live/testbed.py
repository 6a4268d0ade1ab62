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
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
import psutil

from ..errors import InputError
from ..model import LoadedModel, load_model
from ..model.pools import PoolSetting
from ..run.interrupt import RunInterrupted
from ..trace import Trace
from ..trace.join import join_server_records
from ..trace.schema import StationSummary, TierSummary
from . import statements
from .loadgen import generate_load
from .monitor import Monitor
from .observed import Period, server_series, server_summary, station_summary
from .server.bookstore import Database, populate

POSTGRES_SCRIPT = Path(__file__).with_name("postgres.sh")


@dataclass
class State:
    pid: int
    port: int
    admin_port: int
    db: str
    kind: str
    workdir: str
    log: str

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"


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
) -> State:
    """Start the database (SQLite: a file; PostgreSQL: the project's cluster) and the
    bookstore; populate the data if this scale has not been loaded yet."""
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    if _state_file(workdir).exists():
        state = status(workdir)
        if state is not None:
            raise InputError(f"the testbed is already up (pid {state.pid}, {state.target}); run `tierlab live down` first")
    for p, what in ((port, "--port"), (admin_port, "--admin-port")):
        if not _free(p):
            raise InputError(f"port {p} is in use; choose another with {what}")
    if db == "sqlite":
        url = f"sqlite:///{workdir / f'bookstore-{num_items}-{num_ebs}.db'}"
    elif db == "postgres":
        out = subprocess.run(["bash", str(POSTGRES_SCRIPT), "start", str(workdir.parent / "postgres")], capture_output=True, text=True)
        if out.returncode != 0:
            raise InputError(f"PostgreSQL did not start:\n{out.stderr.strip()}")
        url = out.stdout.strip().splitlines()[-1]
    else:
        raise InputError(f"--db must be sqlite or postgres, got {db!r}")
    marker = workdir / f"populated-{db}-{num_items}-{num_ebs}"
    if not marker.exists() or (db == "sqlite" and not Path(url.removeprefix("sqlite:///")).exists()):
        log(f"populating the bookstore ({num_items} items, {num_ebs} EBs) in {db} …")
        for other in workdir.glob(f"populated-{db}-*"):
            other.unlink()
        populate(Database(url), num_items, num_ebs)
        marker.touch()
    token_file = workdir / "token"
    if not token_file.exists():
        token_file.write_text(secrets.token_hex(16))
        token_file.chmod(0o600)
    logfile = workdir / "server.log"
    cmd = [
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
        str(token_file),
        "--threads",
        str(threads),
        "--connections",
        str(connections),
        "--caching",
        caching,
    ]
    with open(logfile, "ab") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    state = State(proc.pid, port, admin_port, url, db, str(workdir), str(logfile))
    _state_file(workdir).write_text(json.dumps(asdict(state), indent=2))
    admin = Admin(state)
    deadline = time.monotonic() + 20
    while True:
        try:
            admin.metrics()
            return state
        except ServerGone:
            if proc.poll() is not None or time.monotonic() > deadline:
                down(workdir)
                tail = "\n".join(Path(logfile).read_text().splitlines()[-15:])
                raise InputError(f"the bookstore did not start; the end of {logfile}:\n{tail}") from None
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
    try:
        os.killpg(state.pid, signal.SIGTERM)
        for _ in range(100):
            if not running(state.pid):
                break
            time.sleep(0.05)
        else:
            os.killpg(state.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if state.kind == "postgres":
        subprocess.run(["bash", str(POSTGRES_SCRIPT), "stop", str(workdir.parent / "postgres")], capture_output=True)
    f.unlink()
    return True


class Admin:
    """The bookstore's loopback admin endpoint."""

    def __init__(self, state: State):
        self.base = f"http://127.0.0.1:{state.admin_port}"
        self.token = (Path(state.workdir) / "token").read_text().strip()

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

    def observe(self, origin: float, window: float) -> None:
        self._call("POST", "/observe", {"origin": origin, "window": window})

    def drain(self, windows: int = 0) -> tuple[pd.DataFrame, dict]:
        """The phase records since the last drain, and the observation's first windows."""
        out = self._call("POST", "/drain", {"windows": windows})
        return pd.DataFrame(out["records"]), out["windows"]


class Testbed:
    """A running testbed (from `status()`), to execute models on."""

    def __init__(self, workdir: str | Path = ".tierlab/live"):
        state = status(workdir)
        if state is None:
            raise InputError("the testbed is not up; start it with `tierlab live up`")
        self.state, self.admin = state, Admin(state)

    def _pids(self) -> dict[str, int]:
        pids = {"app": self.state.pid}
        if self.state.kind == "postgres":
            pidfile = Path(self.state.workdir).parent / "postgres" / "data" / "postmaster.pid"
            if pidfile.exists():
                pids["db"] = int(pidfile.read_text().split()[0])
        return pids

    def wait_idle(self, within: float = 30.0) -> dict:
        """Wait until no request holds or waits for a thread or a connection (requests
        the client abandoned at the end still run); the metrics then."""
        deadline = time.monotonic() + within
        while True:
            m = self.admin.metrics()
            if all(p["busy"] == 0 and p["queued"] == 0 for p in m["pools"].values()) or time.monotonic() > deadline:
                return m
            time.sleep(0.1)

    def apply(self, model: str | Path | dict | LoadedModel, tier: str | None = None) -> PoolSetting:
        """Set the server's pools from the model's tier that has one threads and one
        connections pool (or `tier`): sizes, wait timeouts (none in the model: a day),
        queue bounds, caching, and for `queue: priority` pools the request types'
        priorities (CTP). A pool's `retransmit` is the kernel's accept backlog, which a
        live server has of its own: it is not set."""
        loaded = load_model(model)
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

        self.admin.configure({"threads": pool(setting.threads), "connections": pool(setting.connections) | {"caching": spec[setting.connections].caching}})
        return setting

    def run(self, model: str | Path | dict | LoadedModel, mapping, tier: str | None = None, **load_args) -> Trace:
        """Execute the model on the testbed: its pools set on the server (`apply`), then
        one load (`generate_load`'s arguments) with the server observed and the
        resource monitor on. Returns the trace in the simulator's schema; Ctrl-C raises
        RunInterrupted with what was measured until then, the server's side joined.

        Nothing measured is lost: if the server ends during the run, the client's view
        (its failures counted) is still returned, without the server's phase columns
        and series, and `summary.missing` says what is absent and why."""
        loaded = load_model(model)
        setting = self.apply(loaded, tier)
        names = list(loaded.spec.tiers)
        app = setting.tier
        db = names[names.index(app) + 1] if names.index(app) + 1 < len(names) else "db"
        # Requests the client abandoned when an earlier run ended may still be running:
        # let them finish before draining, or their records would join this run's by id.
        self.wait_idle()
        self.admin.drain()
        window = loaded.spec.run.window
        origin = time.monotonic()
        self.admin.observe(origin, window)
        pids = {app if role == "app" else db: pid for role, pid in self._pids().items()}
        database = Database(self.state.db) if self.state.kind == "postgres" else None
        unstated = statements.reset(database) if database is not None else None
        stopped: KeyboardInterrupt | None = None
        with Monitor(pids, window, origin) as mon:
            try:
                trace = generate_load(loaded, mapping, target=self.state.target, **load_args)
            except RunInterrupted as e:  # Ctrl-C: the server's side of what was measured is still joined
                trace, stopped = e.result, e
        s = trace.summary
        period = Period(window, s["warmup"], s["elapsed"] or 0.0)
        missing = mon.missing()
        server: tuple[pd.DataFrame, dict, dict] | None = None
        try:
            server = self._collect(origin, period)
        except ServerGone as e:
            ended = mon.ended.get(app)
            why = f"the server (pid {self.state.pid}) ended at t ≈ {ended:.1f} s" if ended is not None else str(e)
            missing |= {f"{app}.phases": f"{why}; its phase records were lost with it", f"{app}.series": f"{why}; its windows were lost with it"}
        except KeyboardInterrupt as e:  # a second Ctrl-C while collecting: keep the client's view
            stopped = stopped or e
            missing |= {f"{app}.phases": "Ctrl-C while collecting them", f"{app}.series": "Ctrl-C while collecting them"}
        if database is not None:
            trace.statements, unread = statements.read(database) if unstated is None else (None, unstated)
            missing |= {f"{db}.statements": unread} if unread is not None else {}
        monitored = mon.frame(until=period.elapsed)
        pool_names = {"threads": setting.threads, "connections": setting.connections}
        parts = [trace.timeseries, monitored]
        if server is not None:
            parts.append(server_series(app, server[1], pool_names, period))
        trace.timeseries = pd.concat(parts, ignore_index=True)
        for c in ("tier", "resource", "metric"):
            trace.timeseries[c] = trace.timeseries[c].astype("category")
        tiers: dict[str, TierSummary] = {}
        for position, name in enumerate(pids):
            stations = _cpu_station(monitored, name, period)
            observed = server[1] if name == app and server is not None else None
            summary = server_summary(observed, server[2] if server is not None else {}, pool_names, stations, period)
            tiers[name] = {"position": names.index(name) if name in names else position, "servers": [summary], "dispatch": None}
        s["tiers"] = tiers
        s["missing"] = dict(sorted(missing.items()))
        if trace.requests is not None and server is not None:
            trace.requests = join_server_records(trace.requests, server[0], app)
        if stopped is not None:
            raise RunInterrupted(trace) from stopped
        return trace

    def _collect(self, origin: float, period: Period) -> tuple[pd.DataFrame, dict, dict]:
        """The server's side of the run just ended: its phase records (once its last
        requests finish), its first `period.n` windows, and its pools' sizes."""
        self.wait_idle()
        records, windows = self.admin.drain(period.n)
        if not records.empty:  # a request of an earlier run that outlived wait_idle would join by id
            records = records[records.start >= origin]
        return records, windows, {p: v["size"] for p, v in self.admin.metrics()["pools"].items()}


def _cpu_station(monitored: pd.DataFrame, tier: str, period: Period) -> dict[str, StationSummary]:
    u = monitored[(monitored.tier == tier) & (monitored.resource == "cpu") & (monitored.metric == "utilization")]
    return {"cpu": station_summary(u.set_index("t")["value"], period)} if len(u) else {}


class LiveRunner:
    """Executes a sweep's runs on the testbed instead of the simulator (`sweep(...,
    runner=)`, hence `profile_grid` and `max_sustainable_rate`): `Testbed.run` with
    each run's model — the same path as `tierlab live run`."""

    def __init__(self, bed: Testbed, mapping, tier: str | None = None):
        self.bed, self.mapping, self.tier = bed, mapping, tier

    def __call__(self, model: LoadedModel) -> Trace:
        trace = self.bed.run(model, self.mapping, self.tier)
        lost = {what: why for what, why in trace.summary["missing"].items() if not what.endswith((".monitor", ".statements"))}
        if lost:  # the server is gone: the rest of the sweep would measure nothing (a monitor's or a cross-check's gap is no reason to stop)
            raise ServerGone(f"a run lost {'; '.join(f'{k}: {v}' for k, v in lost.items())}; start the testbed again (`tierlab live up`)")
        return trace
