"""The limits of a run as a whole, stated once (docs/model-limits.md): a run that cannot
fit in the memory this process may use or would need unreasonably many events is
refused before it starts, with the estimate and the field to change. Each field's own
range is in `types` and `spec`.

The estimates are upper bounds from the model alone: the request rate is what the
population offers (an open one's session rate × requests per session; a closed one's
clients / mean think time), capped by the busiest CPU's capacity."""

from __future__ import annotations

import math
import resource
from dataclasses import dataclass
from pathlib import Path

import psutil

from . import dist
from .spec import Closed, Model

MAX_EVENTS = 1e10
"""Events one run may take: about half an hour at the engine's several million a second."""

# Bytes each item costs, engine and Python copies together.
SERIES_VALUE = 40  # the engine's f64, and the long-format row (t, tier, server, resource, metric, value)
RECORD = 120  # id, session, type, status, start, end, retransmissions, response time — twice
RECORD_PER_TIER = 140  # server, visits, time, six phases, db requests — twice
# A session's slot, its pending event and its request in the engine: 680 B resident per
# closed client, measured (peak RSS at 1-5 million clients); the vectors holding them
# grow by doubling, so up to twice that is mapped (1,140 B at 5 million), which is what
# an address-space limit counts.
SESSION = 1400
SERVER_RESOURCE = 512  # a station or pool of one server, with its statistics
# A request type's response-time histogram (HdrHistogram, 1 µs to 10 days at 3 digits,
# its counts allocated whole when the engine starts): 245 kB, 300 kB mapped per type, measured.
REQUEST_TYPE = 300_000
# Events per request beyond one per step: arrival, dispatch, completion, think.
EVENTS_PER_REQUEST = 4
SERVER_SERIES = 4  # concurrency, arrivals, completions, response time (crates/sim observer.rs)
POOL_SERIES = 5  # busy, busy_max, queued, rejected, dropped


def run_size_problems(m: Model, busy: dict, steps: float, per_session: float) -> list[tuple[str, str]]:
    """(field, why) if the run would exceed the memory this process may use
    (`memory_limit`) or MAX_EVENTS. `busy`: CPU busy
    seconds per request at each (tier, station); `steps`: expected steps per request;
    `per_session`: expected requests per session (inf if sessions never end)."""
    r, w = m.run, m.workload
    rate = _request_rate(m, busy, per_session)
    requests = rate * r.duration  # inf when nothing bounds the rate
    windows = math.ceil(r.duration / r.window)
    series = sum(t.servers * (SERVER_SERIES + len(t.stations) + POOL_SERIES * len(t.pools)) for t in m.tiers.values()) + len(m.links)
    resources = sum(t.servers * (1 + len(t.stations) + len(t.pools)) for t in m.tiers.values())
    if isinstance(w.population, Closed):
        sessions, sessions_field = float(w.population.clients), "workload.population.clients"
    else:  # arrivals × how long a session lasts (its think times; the whole run if the chain never ends)
        length = r.duration if per_session == math.inf else min(r.duration, per_session * dist.mean(w.think))
        sessions, sessions_field = w.population.session_rate * length, "workload.population.session_rate"
    parts = {
        "run.window": (
            windows * (series + 1) * SERIES_VALUE,
            f"{r.window:g} s over {r.duration:g} s gives {windows:.2g} windows × {series} series",
            "raise run.window, lower run.duration or use fewer servers",
        ),
        "run.records": (
            requests * (RECORD + RECORD_PER_TIER * len(m.tiers)) if r.records and requests < math.inf else 0.0,
            f"≈ {requests:.2g} requests ({rate:.3g}/s for {r.duration:g} s) kept as records",
            "set run.records: false or lower run.duration",
        ),
        sessions_field: (sessions * SESSION, f"≈ {sessions:.2g} sessions at once", "lower the population"),
        "tiers": (resources * SERVER_RESOURCE, f"{resources:.2g} server stations and pools", "use fewer servers"),
        "requests": (len(m.requests) * REQUEST_TYPE, f"{len(m.requests)} request types, a response-time histogram each", "use fewer request types"),
    }
    problems = []
    total = sum(b for b, _, _ in parts.values())
    # Read only for a run big enough to matter: the limits cost a few file reads.
    if total > SMALL_RUN and total > (limit := memory_limit()).bytes:
        field, (size, what, fix) = max(parts.items(), key=lambda kv: kv[1][0])
        problems.append((field, f"{what} ≈ {_bytes(size)} (the run ≈ {_bytes(total)}; this process may take {limit.bytes_text()}: {limit.what}); {fix}"))
    # Nothing bounds the rate (no think time, no CPU work): still, every session sends a request.
    known, per = (requests, f"({rate:.3g}/s for {r.duration:g} s)") if requests < math.inf else (max(sessions, 1.0), "(one per session at least)")
    events = known * (steps + EVENTS_PER_REQUEST)
    if events > MAX_EVENTS:
        problems.append(
            (
                "run.duration",
                f"≈ {known:.2g} requests {per} × {steps + EVENTS_PER_REQUEST:.3g} events each "
                f"≈ {events:.2g} events (the limit is {MAX_EVENTS:.0e}); lower run.duration, the load or the loop counts",
            )
        )
    return problems


SMALL_RUN = 64 * 2**20
"""A run estimated below this fits anywhere tierlab runs; its limits are not read."""


@dataclass(frozen=True)
class MemoryLimit:
    """Bytes a run in this process may still take, and which limit says so."""

    bytes: float
    what: str

    def bytes_text(self) -> str:
        return _bytes(max(self.bytes, 0.0))


def memory_limit() -> MemoryLimit:
    """The least of what this process may still take: under its address-space limit
    (`ulimit -v`, RLIMIT_AS), under its cgroup's memory limit (v1 or v2), and of the
    machine's available memory. Past the first an allocation fails (the engine aborts),
    past the others the kernel kills the process or the machine swaps."""
    limits = [_address_space(), *cgroup_limits(), _available()]
    return min((lim for lim in limits if lim is not None), key=lambda lim: lim.bytes)


def _available() -> MemoryLimit:
    return MemoryLimit(float(psutil.virtual_memory().available), "the machine's available memory")


def _address_space() -> MemoryLimit | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    mapped = psutil.Process().memory_info().vms
    return MemoryLimit(float(soft - mapped), f"its address-space limit (ulimit -v) of {_bytes(soft)} less the {_bytes(mapped)} it maps")


# A cgroup v1 limit at or above this is "no limit" (the kernel writes 2^63 rounded down to a page).
_UNLIMITED = 2**62


def cgroup_limits(proc: Path = Path("/proc/self"), root: Path = Path("/")) -> list[MemoryLimit]:
    """Per cgroup level of this process with a memory limit, from its own up to the
    hierarchy's root (a parent's limit binds its children): the limit less the level's
    working set (usage less the page cache the kernel can drop, as the kernel's own
    accounting of pressure does). The cgroup comes from `proc`/cgroup, the hierarchies'
    mount points from `proc`/mountinfo; `root` prefixes those paths (tests)."""
    try:
        groups = (proc / "cgroup").read_text().splitlines()
        mounts = (proc / "mountinfo").read_text().splitlines()
    except OSError:  # not Linux, or /proc hidden: no cgroup to read
        return []
    out = []
    for line in groups:
        hierarchy, controllers, path = line.split(":", 2)
        v2 = hierarchy == "0" and controllers == ""
        if not v2 and "memory" not in controllers.split(","):
            continue
        mount = _cgroup_mount(mounts, v2)
        if mount is None:
            continue
        mount_point, mount_root = mount
        # The process's cgroup as seen below the mount (the mount may show a subtree).
        rel = Path(path).relative_to(mount_root) if Path(path).is_relative_to(mount_root) else Path()
        level = root / mount_point.lstrip("/") / rel
        top = root / mount_point.lstrip("/")
        while True:
            lim = _cgroup_level(level, v2)
            if lim is not None:
                out.append(lim)
            if level == top:
                break
            level = level.parent
    return out


def _cgroup_mount(mounts: list[str], v2: bool) -> tuple[str, str] | None:
    """(mount point, root of the hierarchy it shows) of the cgroup v2 hierarchy, or of
    the v1 hierarchy of the memory controller."""
    for line in mounts:
        fields, _, tail = line.partition(" - ")
        f, t = fields.split(), tail.split()
        if len(f) < 5 or len(t) < 3:
            continue
        if (v2 and t[0] == "cgroup2") or (not v2 and t[0] == "cgroup" and "memory" in t[2].split(",")):
            return f[4], f[3]
    return None


def _cgroup_level(d: Path, v2: bool) -> MemoryLimit | None:
    names = ("memory.max", "memory.current", "inactive_file") if v2 else ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
    try:
        text = (d / names[0]).read_text().strip()
        if text == "max" or int(text) >= _UNLIMITED:
            return None
        limit, usage = int(text), int((d / names[1]).read_text())
        stat = dict(line.split() for line in (d / "memory.stat").read_text().splitlines() if line.count(" ") == 1)
    except (OSError, ValueError):  # a level without the files (or not readable): no limit known there
        return None
    working = usage - min(int(stat.get(names[2], 0)), usage)
    return MemoryLimit(float(limit - working), f"its cgroup's memory limit, {_bytes(limit)} in {d / names[0]}, less the {_bytes(working)} the group uses")


def _request_rate(m: Model, busy: dict, per_session: float) -> float:
    """Requests per second, at most: offered by the population, capped by the busiest CPU."""
    w = m.workload
    if isinstance(w.population, Closed):
        think = dist.mean(w.think)
        offered = w.population.clients / think if think > 0 else math.inf
    else:
        offered = w.population.session_rate * per_session
    most = max(busy.values(), default=0.0)
    return min(offered, 1 / most if most > 0 else math.inf)


def _bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if n < 1000:
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} EB"
