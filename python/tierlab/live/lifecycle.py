"""The live testbed's processes: `up` starts the database and a bookstore server in the
background (state in `.tierlab/live/` under the working directory; `cluster.up_cluster`
starts the cluster form), `status` finds them, `down` stops them. Talking to the
running servers is `admin`; running a model on them, `testbed`."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import psutil

from ..errors import InputError
from . import cpu_budget, jvm
from .admin import Admin, ServerGone
from .server.bookstore import Database, populate

Server = Literal["python", "java"]  # the bookstore's runtime
# Seconds for a Python server's admin endpoint to answer after its start.
START_WITHIN = 20.0
POSTGRES_SCRIPT = Path(__file__).with_name("postgres.sh")
REDIS_SCRIPT = Path(__file__).with_name("redis.sh")


# Both servers' default for the connections held at once (serve.py, Main.java): the
# Python one's select() fails beyond 1,024 descriptors, which caps it there too.
CONNECTION_LIMIT = 900
PYTHON_CONNECTIONS = 1000
# Descriptors waitress counts against its connection limit that are not clients': its
# listening socket and its wake-up pipe (tests/live/test_live_server_limits.py: at a
# limit of 12 it holds 10 clients, Tomcat 12).
WAITRESS_OWN = 2


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
    server: Server = "python"
    servers: list[dict] = field(default_factory=list)
    proxies: list[dict] = field(default_factory=list)
    sessions: str | None = None
    # CPU budgets in force (cores by tier: app, db), their quota groups, and where whole
    # cores are pinned, every tier's cpuset group and the CPUs pinned to each
    # (`cpu_budget.Held`); `cpu_note` says why budgets asked for are not in force (no
    # cgroup could be written), None if they are; `pin_note` why whole cores are held by
    # a quota instead of pinned.
    cpu: dict[str, float] = field(default_factory=dict)
    cgroups: dict[str, str] = field(default_factory=dict)
    cpusets: dict[str, str] = field(default_factory=dict)
    pinned: dict[str, list[int]] = field(default_factory=dict)
    cpu_note: str | None = None
    pin_note: str | None = None
    # The connections the bookstore holds at once, where set (`up(connection_limit=)`);
    # None: the server's own default, CONNECTION_LIMIT.
    connection_limit: int | None = None

    @property
    def client_connections(self) -> int | None:
        """The clients' connections the bookstore holds at once (its limit, less what
        waitress counts of its own); None for a cluster, whose clients connect to its
        proxies."""
        if self.servers or self.proxies:
            return None
        limit = self.connection_limit or CONNECTION_LIMIT
        return limit - WAITRESS_OWN if self.server == "python" else limit

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


def port_free(port: int) -> bool:
    """Nothing listens on the loopback `port`."""
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


# Ports are picked from here up to the kernel's ephemeral range, which starts above it
# on Linux (32768) and macOS (49152).
LOWEST_PORT = 10000


def free_ports(n: int) -> list[int]:
    """`n` distinct loopback ports free now (each bound, then released), drawn at random
    from below the kernel's ephemeral range: the one way tests, studies, benchmarks and
    clusters pick ports. Not the kernel's own pick (a bind to port 0): that is an
    ephemeral port, which an outgoing connection — the load generator's, a proxy's,
    PostgreSQL's clients' — can take between the pick and the server's bind (a cluster
    study's second round of servers failed so: "Address already in use")."""
    high = _ephemeral_low()
    draw = secrets.SystemRandom()
    ports: list[int] = []
    while len(ports) < n:
        port = draw.randrange(LOWEST_PORT, high)
        if port in ports:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
    return ports


def _ephemeral_low(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> int:
    """The first port of the kernel's ephemeral range (Linux: from /proc; elsewhere
    32768, below macOS's 49152), at least LOWEST_PORT + 1000."""
    try:
        low = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return max(low, LOWEST_PORT + 1000)


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
    server: Server = "python",
    cpu: dict[str, float] | None = None,
    pin: bool = True,
    connection_limit: int | None = None,
) -> State:
    """Start the database (SQLite: a file; PostgreSQL: the project's cluster) and the
    bookstore (`server`: the Python one, or the JVM one, built first if needed); populate
    the data if this scale has not been loaded yet. `otel`: a file the server also
    exports its OpenTelemetry traces and metrics to (OTLP/JSON lines). `cpu`: cores per
    tier (`app`, `db`; `cpu_budget.parse`), each tier's processes held to them by a
    cgroup (`budget`), whole cores pinned unless not `pin`. `connection_limit`: the
    connections the server holds at once (Tomcat's `maxConnections`, waitress's
    `connection_limit`; default CONNECTION_LIMIT): past it new ones wait in the listen
    backlog, and as each session keeps its connection through its thinks, it bounds the
    sessions open at once (investigations/twin/results/pinned_core_placement)."""
    if cpu and "db" in cpu and db == "sqlite":
        raise InputError("--cpu db=…: SQLite runs inside the bookstore's process, under its app budget; drop db= or use --db postgres")
    if connection_limit is not None and connection_limit < 1:
        raise InputError(f"--connection-limit {connection_limit}: give at least 1")
    if connection_limit is not None and server == "python" and connection_limit > PYTHON_CONNECTIONS:
        raise InputError(
            f"--connection-limit {connection_limit}: the Python server holds at most {PYTHON_CONNECTIONS} "
            "(waitress polls with select(), which fails beyond 1,024 descriptors); give fewer, or use --server java"
        )
    workdir = prepare(workdir, [(port, "--port"), (admin_port, "--admin-port")])
    url = database(workdir, db, num_items, num_ebs, log)
    logfile = workdir / "server.log"
    if otel:  # the server writes it from its start, on either runtime
        Path(otel).parent.mkdir(parents=True, exist_ok=True)
    limit = ("--connection-limit", str(connection_limit)) if connection_limit is not None else ()
    cmd = server_command(server, workdir, url, port, admin_port, threads, connections, caching, *limit, otel=otel, log=log)
    state = State(spawn(cmd, logfile), port, admin_port, url, db, str(workdir), str(logfile), server=server, connection_limit=connection_limit)
    save(state)  # first, so that `down` finds the server whatever happens next
    if cpu:
        budget(state, cpu, log, pin)
        save(state)
    await_admin(state, [Admin(workdir, admin_port)], logfile)
    return state


def budget(state: State, cpu: dict[str, float], log, pin: bool = True) -> None:
    """Hold each tier to its cores: the bookstore's process and its children (`app`),
    PostgreSQL's postmaster and its backends (`db`); whole cores pinned where the
    machine has a core to spare (`cpu_budget.apply`), PostgreSQL then kept off them even
    without a budget of its own; the load generator stays outside both. Recorded in
    `state`; where no cgroup can be written, said through `log` and in
    `state.cpu_note`, and the testbed runs without."""
    processes = {"app": cpu_budget.tree(state.pid)}
    if state.kind == "postgres":
        processes["db"] = cpu_budget.tree(int(postmaster_pidfile(Path(state.workdir)).read_text().split()[0]))
    try:
        held = cpu_budget.apply(cpu, processes, Path(state.workdir), pin=pin)
    except cpu_budget.Unavailable as e:
        state.cpu_note = f"CPU budgets {cpu} not set: {e}; the tiers run without, sharing the machine's cores"
        log(f"warning: {state.cpu_note}")
        return
    state.cpu, state.cgroups, state.cpusets, state.pinned, state.pin_note = dict(cpu), held.quotas, held.cpusets, held.pinned, held.note
    log(
        "CPU budgets: "
        + ", ".join(
            f"{role} {cores:g} core(s) " + (f"pinned to CPU {held.pinned[role]}" if role in held.pinned else f"by quota ({held.quotas[role]})")
            for role, cores in cpu.items()
        )
    )
    if held.note is not None:
        log(f"warning: {held.note}")


def postmaster_pidfile(workdir: Path) -> Path:
    """PostgreSQL's postmaster.pid for the testbed in `workdir`."""
    return workdir.parent / "postgres" / "data" / "postmaster.pid"


def prepare(workdir: str | Path, ports: list[tuple[int, str]]) -> Path:
    """The working folder, its token, and a check that nothing runs and the ports are free."""
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    if _state_file(workdir).exists():
        state = status(workdir)
        if state is not None:
            raise InputError(f"the testbed is already up (pid {state.pid}, {state.target}); run `tierlab live down` first")
    for p, what in ports:
        if not port_free(p):
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
    # v2: with the baseline `restore` puts the data back to (a database populated before
    # it is populated again).
    marker = workdir / f"populated-{db}-{num_items}-{num_ebs}-v2"
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


def server_command(
    server: Server,
    workdir: Path,
    url: str,
    port: int,
    admin_port: int,
    threads: int,
    connections: int,
    caching: str,
    *extra: str,
    otel: str | Path | None = None,
    log=print,
) -> list[str]:
    """The command that starts one bookstore server: the same options, the same admin
    endpoint, on either runtime (`extra`: a cluster member's `--server I --servers K`,
    `--sessions URL`)."""
    options = [
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
    if server == "java":
        return jvm.server_command(options, otel=Path(otel) if otel else None, log=log)
    if server != "python":
        raise InputError(f"--server must be python or java, got {server!r}")
    return [sys.executable, "-m", "tierlab.live.server.serve", *options, *(["--otel", str(Path(otel).resolve())] if otel else [])]


# The servers this process started, by pid: a testbed outlives the `live up` that
# started it, but one brought down by the process that brought it up (a study, a test)
# is reaped by `down` at once rather than left to the garbage collector's warning.
_spawned: dict[int, subprocess.Popen] = {}


def spawn(cmd: list[str], logfile: Path) -> int:
    """Start `cmd` in the background, in a process group of its own (so `down` stops
    its children too), its output appended to `logfile`."""
    with open(logfile, "ab") as f:
        child = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    _spawned[child.pid] = child
    return child.pid


def save(state: State) -> None:
    _state_file(Path(state.workdir)).write_text(json.dumps(asdict(state), indent=2))


def await_admin(state: State, admins: list[Admin], logfile: Path) -> None:
    """Wait until every admin endpoint answers; if one does not in time (a JVM takes
    longer to start) or a process ends, stop everything and say why, with the end of
    that process's log (or `logfile`)."""
    deadline = time.monotonic() + (jvm.START_WITHIN if state.server == "java" else START_WITHIN)
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
    for group in [*state.cgroups.values(), *state.cpusets.values()]:
        cpu_budget.release(group)
    f.unlink()
    return True


def _stop(pid: int) -> None:
    """SIGTERM to the process's group, SIGKILL after 5 s; reaped if it is ours."""
    try:
        os.killpg(pid, signal.SIGTERM)
        for _ in range(100):
            if not running(pid):
                break
            time.sleep(0.05)
        else:
            os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child = _spawned.pop(pid, None)
    if child is not None:
        child.wait()
