"""The JVM bookstore (jvm/bookstore): the same TPC-W pages on embedded Tomcat (M worker
threads) and HikariCP (N connections), the papers' own setting, with the Python
server's options and admin endpoint — so `tierlab live up --server java` starts it in
place of `python -m tierlab.live.server.serve` and everything after works unchanged.

Built with Maven on demand and cached: `build()` runs `mvn package` (offline first,
from the local repository) only when the jar is missing or older than a source — the
pom, the Java sources, and the Python bookstore's statements.sql and vocabulary.json,
which the jar bundles. The Maven project is a clone's jvm/bookstore (`project()`). The database is the one the Python data generator populated
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
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

# Seconds to wait for the admin endpoint: a JVM with the agent attached takes ~20 s to
# start on a loaded two-core machine (the agent instruments every class it loads).
START_WITHIN = 90.0
# Seconds between the agent's metric exports (its default, 60 s, would give a short
# run one or two points of each pool's series).
OTEL_METRIC_INTERVAL = 1.0


@dataclass(frozen=True)
class Project:
    """The Maven project (a clone's jvm/bookstore) and what it builds in target/."""

    root: Path

    @property
    def jar(self) -> Path:
        return self.root / "target" / "bookstore.jar"

    @property
    def agent(self) -> Path:
        return self.root / "target" / "otel" / "opentelemetry-javaagent.jar"

    def sources(self) -> list[Path]:
        """Every file the jar is built from: the pom, the Java sources, and what it
        bundles from the Python bookstore (the pom's <resources>: the clone's copies)."""
        shared = self.root.parent.parent / "python" / "tierlab" / "live" / "server" / "bookstore"
        return [self.root / "pom.xml", *sorted(p for p in (self.root / "src").rglob("*") if p.is_file()), shared / "statements.sql", shared / "vocabulary.json"]

    def stale(self, target: Path) -> bool:
        """Whether `target` is missing or older than a source."""
        return not target.exists() or target.stat().st_mtime < max(p.stat().st_mtime for p in self.sources())


def project() -> Project | None:
    """The clone's Maven project: beside this package (an editable install, or the clone
    itself on the path), else under the working directory (a clone's root, after
    `pip install .` put the package elsewhere)."""
    for root in (Path(__file__).resolve().parents[3], Path.cwd()):
        if (root / "jvm" / "bookstore" / "pom.xml").is_file():
            # Resolved: a checkout's jvm/ may be a link, and sources() reads the clone's python/ beside it.
            return Project((root / "jvm" / "bookstore").resolve())
    return None


def tools() -> str | None:
    """Why the JVM server cannot be built or run here, or None."""
    missing = [t for t in ("java", "mvn") if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not found: the JVM bookstore needs a JDK ≥ 17 and Maven (Debian: apt-get install openjdk-17-jdk-headless maven)"
    if project() is None:
        return "the JVM bookstore's sources (jvm/bookstore/pom.xml) are neither beside the tierlab package nor under the working directory: run from a clone's root"
    return None


def build(otel: bool = False, log: Callable[[str], object] = print) -> Project:
    """The project, its jar built first if it is missing or stale (and the agent with
    `otel`). Maven runs offline first (the local repository has everything after one
    build), online if that fails; concurrent callers build once (a lock in target/)."""
    why = tools()
    found = project()
    if why is not None or found is None:
        raise InputError(why or "no jvm/bookstore")
    (found.root / "target").mkdir(exist_ok=True)
    with open(found.root / "target" / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if found.stale(found.jar) or (otel and not found.agent.exists()):
            log(f"building the JVM bookstore with Maven ({found.root}) …")
            goal = ["mvn", "-q", "-B", "-f", str(found.root / "pom.xml"), "package", *(["-Potel"] if otel else [])]
            out = subprocess.run([goal[0], "-o", *goal[1:]], capture_output=True, text=True)
            if out.returncode != 0:
                out = subprocess.run(goal, capture_output=True, text=True)
            if out.returncode != 0:
                tail = "\n".join((out.stdout + out.stderr).strip().splitlines()[-25:])
                raise InputError(f"the JVM bookstore did not build (`{' '.join(goal)}`):\n{tail}")
    return found


def server_command(options: list[str], *, otel: Path | None = None, log: Callable[[str], object] = print) -> list[str]:
    """The command that starts the JVM bookstore, built first if needed, with the Python
    server's `options` (`lifecycle.server_command` makes them: the same options reach
    the same admin endpoint), and `otel`, a file for the agent's OTLP/JSON lines."""
    built = build(otel=otel is not None, log=log)
    jar = built.jar
    if otel is None:
        return ["java", "-jar", str(jar), *options]
    agent = [
        # First the jar's own agent: stdout becomes `otel`, a whole line at a time (the
        # exporters below write from two threads; their long lines would interleave).
        f"-javaagent:{jar}={Path(otel).resolve()}",
        f"-javaagent:{built.agent}",
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
