"""The JVM bookstore (jvm/bookstore): the same TPC-W pages on embedded Tomcat (M worker
threads) and HikariCP (N connections), the papers' own setting, with the Python
server's options and admin endpoint — so `tierlab live up --server java` starts it in
place of `python -m tierlab.live.server.serve` and everything after works unchanged.

Built with Maven on demand and cached: `build()` runs `mvn package` (offline first,
from the local repository) only when the jar is missing or older than a source — the
pom, the Java sources, and the Python bookstore's statements.sql and vocabulary.json,
which the jar bundles. The database is the one the Python data generator populated
(`testbed.database`); this server never creates or fills tables.

With `otel=FILE` the OpenTelemetry Java agent (a Maven artifact, fetched by the pom's
`otel` profile) is attached, exporting traces and metrics as OTLP/JSON lines
(`{"resourceSpans": …}`, `{"resourceMetrics": …}`, one export request per line) to
FILE, through the jar's own agent (`OtelOut`) that keeps the lines whole."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from ..errors import InputError

PROJECT = Path(__file__).resolve().parents[3] / "jvm" / "bookstore"
JAR = PROJECT / "target" / "bookstore.jar"
AGENT = PROJECT / "target" / "otel" / "opentelemetry-javaagent.jar"
# What the jar bundles from the Python bookstore (the pom's <resources>).
SHARED = [Path(__file__).with_name("server") / "bookstore" / name for name in ("statements.sql", "vocabulary.json")]
# Seconds to wait for the admin endpoint: a JVM with the agent attached takes ~20 s to
# start on a loaded two-core machine (the agent instruments every class it loads).
START_WITHIN = 90.0
# Seconds between the agent's metric exports (its default, 60 s, would give a short
# run one or two points of each pool's series).
OTEL_METRIC_INTERVAL = 1.0


def sources() -> list[Path]:
    """Every file the jar is built from."""
    return [PROJECT / "pom.xml", *sorted(p for p in (PROJECT / "src").rglob("*") if p.is_file()), *SHARED]


def stale(target: Path) -> bool:
    """Whether `target` is missing or older than a source."""
    return not target.exists() or target.stat().st_mtime < max(p.stat().st_mtime for p in sources())


def tools() -> str | None:
    """Why the JVM server cannot be built or run here, or None."""
    missing = [t for t in ("java", "mvn") if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not found: the JVM bookstore needs a JDK ≥ 17 and Maven (Debian: apt-get install openjdk-17-jdk-headless maven)"
    if not (PROJECT / "pom.xml").exists():
        return f"the JVM bookstore's sources are not at {PROJECT}: it is built from a clone of the repository"
    return None


def build(otel: bool = False, log: Callable[[str], object] = print) -> Path:
    """The jar, built first if it is missing or stale (and the agent with `otel`).
    Maven runs offline first (the local repository has everything after one build),
    online if that fails; concurrent callers build once (a lock in target/)."""
    why = tools()
    if why is not None:
        raise InputError(why)
    (PROJECT / "target").mkdir(exist_ok=True)
    with open(PROJECT / "target" / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stale(JAR) or (otel and not AGENT.exists()):
            log(f"building the JVM bookstore with Maven ({PROJECT}) …")
            goal = ["mvn", "-q", "-B", "-f", str(PROJECT / "pom.xml"), "package", *(["-Potel"] if otel else [])]
            out = subprocess.run([goal[0], "-o", *goal[1:]], capture_output=True, text=True)
            if out.returncode != 0:
                out = subprocess.run(goal, capture_output=True, text=True)
            if out.returncode != 0:
                tail = "\n".join((out.stdout + out.stderr).strip().splitlines()[-25:])
                raise InputError(f"the JVM bookstore did not build (`{' '.join(goal)}`):\n{tail}")
    return JAR


def server_command(
    workdir: Path,
    url: str,
    port: int,
    admin_port: int,
    threads: int,
    connections: int,
    caching: str,
    *extra: str,
    otel: Path | None = None,
    log: Callable[[str], object] = print,
) -> list[str]:
    """The command that starts the JVM bookstore, built first if needed: the arguments
    of `testbed.server_command` (the same options reach the same admin endpoint), and
    `otel`, a file for the agent's OTLP/JSON lines. A cluster's `--server I --servers K`
    pass through; `--sessions` (session state in Redis) is refused: this server keeps
    sessions in its own memory only."""
    if "--sessions" in extra:
        raise InputError(
            "the JVM bookstore keeps session state in its own memory only; a cluster with `session_state` needs the Python server (`--server python`)"
        )
    jar = build(otel=otel is not None, log=log)
    options = [
        "--db",
        url,
        "--port",
        str(port),
        "--admin-port",
        str(admin_port),
        "--token-file",
        str(Path(workdir) / "token"),
        "--threads",
        str(threads),
        "--connections",
        str(connections),
        "--caching",
        caching,
        *extra,
    ]
    if otel is None:
        return ["java", "-jar", str(jar), *options]
    agent = [
        # First the jar's own agent: stdout becomes `otel`, a whole line at a time (the
        # exporters below write from two threads; their long lines would interleave).
        f"-javaagent:{jar}={Path(otel).resolve()}",
        f"-javaagent:{AGENT}",
        "-Dotel.service.name=tierlab-bookstore",
        # The stdout exporters write whole export requests, one JSON line each (the
        # Collector's file format); the server's own logs go to stderr.
        "-Dotel.traces.exporter=experimental-otlp/stdout",
        "-Dotel.metrics.exporter=experimental-otlp/stdout",
        "-Dotel.logs.exporter=none",
        f"-Dotel.metric.export.interval={int(OTEL_METRIC_INTERVAL * 1000)}",
        # Tomcat's thread pool (its ThreadPool MBean: threads, threads busy) as metrics.
        "-Dotel.jmx.target.system=tomcat",
        # The admin endpoint (the JDK's HTTP server) is not the application: its calls
        # would be SERVER spans of a page "/".
        "-Dotel.instrumentation.java-http-server.enabled=false",
    ]
    return ["java", *agent, "-jar", str(jar), *options]
