"""The live testbed's lifecycle: `up` starts the database and the bookstore in the
background (state in `.tierlab/live/` under the working directory), `down` stops
them, and `Testbed.run` drives one measured load: the load generator's client view
joined, request by request, with the middleware's phase records (`app.*` columns, as
in a simulated trace) and the resource monitor's series."""

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

import numpy as np
import pandas as pd

from ..errors import InputError
from ..trace import PHASES, Trace
from .bookstore import Database, populate
from .load import load
from .monitor import Monitor

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


def _free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def up(workdir: str | Path = ".tierlab/live", *, db: str = "sqlite", port: int = 8080, admin_port: int = 8081,
       threads: int = 20, connections: int = 10, caching: str = "transaction", num_items: int = 1000,
       num_ebs: int = 1, log=print) -> State:
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
    cmd = [sys.executable, "-m", "tierlab.live.serve", "--db", url, "--port", str(port), "--admin-port", str(admin_port),
           "--token-file", str(token_file), "--threads", str(threads), "--connections", str(connections), "--caching", caching]
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
        except OSError:
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
    try:
        os.kill(state.pid, 0)
    except ProcessLookupError:
        return None
    return state


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
            os.kill(state.pid, 0)
            time.sleep(0.05)
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
        req = urllib.request.Request(self.base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise InputError(f"admin {path}: {json.loads(e.read()).get('error', e.reason)}") from None

    def metrics(self) -> dict:
        return self._call("GET", "/metrics")

    def configure(self, **settings) -> dict:
        return self._call("POST", "/config", settings)

    def drain(self) -> pd.DataFrame:
        return pd.DataFrame(self._call("POST", "/drain", {})["records"])


class Testbed:
    """A running testbed (from `status()`), to drive measured loads against."""

    def __init__(self, workdir: str | Path = ".tierlab/live"):
        state = status(workdir)
        if state is None:
            raise InputError("the testbed is not up; start it with `tierlab live up`")
        self.state, self.admin = state, Admin(state)

    def _roles(self) -> dict[str, int]:
        roles = {"app": self.state.pid}
        if self.state.kind == "postgres":
            pidfile = Path(self.state.workdir).parent / "postgres" / "data" / "postmaster.pid"
            if pidfile.exists():
                roles["db"] = int(pidfile.read_text().split()[0])
        return roles

    def wait_idle(self, within: float = 30.0) -> dict:
        """Wait until no request holds or waits for a thread or a connection (requests
        the client abandoned at the end still run); the metrics then."""
        deadline = time.monotonic() + within
        while True:
            m = self.admin.metrics()
            pools = [m["threads"], *([m["connections"]] if "connections" in m else [])]
            if all(p["busy"] == 0 and p["queued"] == 0 for p in pools) or time.monotonic() > deadline:
                return m
            time.sleep(0.1)

    def run(self, model, mapping, **load_args) -> Trace:
        """One load with the resource monitor on; the server's phase records are
        joined to the client's by request id."""
        # Requests the client abandoned when an earlier run ended may still be running:
        # let them finish before draining, or their records would join this run's by id.
        self.wait_idle()
        self.admin.drain()
        with Monitor(self._roles()) as mon:
            trace = load(model, mapping, target=self.state.target, **load_args)
        self.wait_idle()  # this run's own last requests finish and are recorded
        server = self.admin.drain()
        trace.timeseries = pd.concat([trace.timeseries, mon.frame()], ignore_index=True)
        for c in ("tier", "resource", "metric"):
            trace.timeseries[c] = trace.timeseries[c].astype("category")
        trace.summary["tiers"] = {"app": {"position": 0, "servers": [self.admin.metrics()]}}
        if trace.requests is not None:
            trace.requests = join_server_records(trace.requests, server, "app")
        return trace


class LiveRunner:
    """Executes a sweep's runs on the testbed instead of the simulator (`sweep(...,
    runner=)`, hence `profile_grid` and `max_sustainable_rate`): each run's model sets
    the server's pools — the sized tier's M, N, caching, wait timeout and, for pools
    with `queue: priority`, the request types' priorities (CTP), through the admin
    endpoint — and the load: workload, duration, warm-up, seed."""

    def __init__(self, bed: Testbed, mapping, tier: str | None = None):
        self.bed, self.mapping, self.tier = bed, mapping, tier

    def __call__(self, model) -> Trace:
        from ..sizing.profiling import PoolSetting

        setting = PoolSetting.find(model, self.tier)
        pools = model.spec.tiers[setting.tier].pools
        threads, conns = pools[setting.threads], pools[setting.connections]
        # The middleware has one wait timeout for both pools; None in the model is forever.
        timeout = threads.timeout if threads.timeout is not None else 24 * 3600.0
        ranks = {name: r.priority for name, r in model.spec.requests.items()}
        priorities = lambda pool: ranks if pool.queue == "priority" else {}  # noqa: E731
        self.bed.admin.configure(threads=threads.size, connections=conns.size, caching=conns.caching, timeout=timeout,
                                 thread_priorities=priorities(threads), connection_priorities=priorities(conns))
        return self.bed.run(model, self.mapping)


def join_server_records(client: pd.DataFrame, server: pd.DataFrame, tier: str) -> pd.DataFrame:
    """Add `<tier>.*` phase columns to the client's records (docs/trace.md); requests
    the server never saw (a failed connection) get visits 0 and zero phases."""
    cols = ["time", *PHASES, "db_requests"]
    if server.empty:
        server = pd.DataFrame(columns=["id", *cols])
    s = server[server.id > 0].drop_duplicates("id").set_index("id")[cols]
    joined = s.reindex(client["id"].to_numpy())
    seen = joined["time"].notna().to_numpy()
    out = client.copy()
    out[f"{tier}.server"] = np.where(seen, 0, -1).astype(np.int32)
    out[f"{tier}.visits"] = seen.astype(np.uint32)
    for c in cols:
        v = joined[c].fillna(0).to_numpy()
        out[f"{tier}.{c}"] = v.astype(np.uint32) if c == "db_requests" else v.astype(float)
    return out
