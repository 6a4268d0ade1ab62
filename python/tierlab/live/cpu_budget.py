"""CPU budgets for the live testbed's tiers (issue 41 item 1): each tier's processes in a
cgroup of their own whose CFS quota is the tier's cores, so that the bookstore and the
database behave like machines of their own instead of competing second by second for
the same cores (and with the load generator, which stays outside both).

A budget of whole cores is held by pinning instead, where the machine has a core to
spare: the tier's processes in a cpuset of cores of their own, every other process of
the testbed and the load generator's threads (`kept_off`, during a run) on the rest. A
quota lets a tier's threads run on every core at once until the period's share is spent;
pinned, the tier is a machine of that many cores, which is what its model station is
(investigations/twin/results/quota_period: the twin within 1–7% of the pinned JVM).

cgroup v1 (this project's machine: the `cpu` controller mounted on its own) takes
`cpu.cfs_period_us` and `cpu.cfs_quota_us`; cgroup v2 takes `cpu.max` ("QUOTA PERIOD")
and needs the controller enabled in the parent's `cgroup.subtree_control`. A group is
made under the cgroup this process is in (`/proc/self/cgroup`), one per tier and
working folder, every process of the tier written to its `cgroup.procs` (a process's
later children, PostgreSQL's backends, are born in it); `release` moves what is left
back to the parent and removes the group. Where no group can be made (no controller, no
permission), `Unavailable` says why: the caller says so and runs without."""

from __future__ import annotations

import errno
import hashlib
import math
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd
import psutil

from ..errors import InputError
from ..model import LoadedModel
from ..model.pools import PoolSetting
from ..model.spec import Cpu
from ..trace import Trace

ROLES = ("app", "db")  # the testbed's tiers: the bookstore's process(es), the database's
# The CFS period: 10 ms, not the kernel's default 100 ms. A group whose threads run on
# every core is, within a period, a machine of all of them, and once the period's quota
# is spent it stops until the period ends: under 100 ms the JVM at one core of two ran
# 18% faster than pinned to one core at 80% load, and stopped 45 ms at a time nearer
# capacity; under 10 ms its mean response time came within 3% of the pinned JVM's
# (investigations/twin/results/quota_period). A tenth of the period bounds both.
PERIOD_US = 10_000
MIN_QUOTA_US = 1_000  # the kernel refuses a quota under 1 ms
MAX_PERIOD_US = 1_000_000  # and a period over 1 s


class Unavailable(Exception):
    """No CPU budget can be set here; the message says why."""


def parse(text: str) -> dict[str, float]:
    """`app=0.5,db=0.5` → {"app": 0.5, "db": 0.5}: cores per tier of the testbed."""
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        role, eq, value = part.partition("=")
        role = role.strip()
        if not eq or role not in ROLES:
            raise InputError(f"--cpu: {part!r} is not TIER=CORES with TIER one of {', '.join(ROLES)} (e.g. app=0.5,db=0.5)")
        try:
            cores = float(value)
        except ValueError:
            raise InputError(f"--cpu: {role}={value!r}: the cores are a number (e.g. {role}=0.5)") from None
        if not (math.isfinite(cores) and cores > 0):
            raise InputError(f"--cpu: {role}={value}: the cores must be a positive number")
        if role in out:
            raise InputError(f"--cpu: {role} is given twice")
        period_for(cores)  # one the kernel can hold
        out[role] = cores
    if not out:
        raise InputError("--cpu: give at least one TIER=CORES (e.g. app=0.5)")
    return out


def from_model(model: LoadedModel, tier: str | None = None) -> dict[str, float]:
    """The budgets a model states: its pooled tier's (the bookstore's) CPU station and the
    next tier's (the database's), each `cores` × `speed` cores. A tier without a CPU
    station has none."""
    names = list(model.spec.tiers)
    app = PoolSetting.find(model, tier).tier
    at = names.index(app)
    out: dict[str, float] = {}
    for role, name in zip(ROLES, [app, names[at + 1] if at + 1 < len(names) else None]):
        cpu = next((s for s in model.spec.tiers[name].stations.values() if isinstance(s, Cpu)), None) if name else None
        if cpu is not None:
            out[role] = float(cpu.cores) * float(cpu.speed)
    return out


def station(cores: float) -> dict[str, float]:
    """A CPU station of `cores` (a budget, fractional perhaps) in the model's terms,
    whose `cores` are whole: ⌈cores⌉ at speed cores / ⌈cores⌉. Its capacity is the
    budget's when as many jobs run as it has cores; one job alone runs at that speed,
    where live one thread under a 1.5-core budget may use a whole core (a quota caps
    the group, not each thread)."""
    whole = max(1, math.ceil(cores - 1e-9))
    return {"cores": whole, "speed": cores / whole}


Controller = Literal["cpu", "cpuset"]


@dataclass(frozen=True)
class Hierarchy:
    """Where groups are made: `parent`, a directory of the cgroup tree with the
    `controller` (`cpu` for quotas, `cpuset` for pinning), of cgroup `version` 1 or 2."""

    version: Literal[1, 2]
    parent: Path
    controller: Controller = "cpu"

    @classmethod
    def find(cls, mounts: Path = Path("/proc/self/mounts"), own: Path = Path("/proc/self/cgroup"), controller: Controller = "cpu") -> Hierarchy:
        """This process's hierarchy of `controller`: its v1 mount if there is one (a
        hybrid machine binds the controller to v1), else the v2 tree; the parent is the
        cgroup this process is in. Unavailable if neither has the controller."""
        entries = [line.split() for line in mounts.read_text().splitlines()]
        memberships = [line.split(":", 2) for line in own.read_text().splitlines() if line.count(":") >= 2]
        v1 = next((e[1] for e in entries if len(e) > 3 and e[2] == "cgroup" and controller in e[3].split(",")), None)
        if v1 is not None:
            path = next((p for _, ctrl, p in memberships if controller in ctrl.split(",")), "/")
            return cls(1, Path(v1) / path.lstrip("/"), controller)
        v2 = next((e[1] for e in entries if len(e) > 2 and e[2] == "cgroup2"), None)
        if v2 is None:
            raise Unavailable(f"no cgroup hierarchy with the {controller} controller is mounted (see /proc/self/mounts)")
        path = next((p for h, ctrl, p in memberships if h == "0" and ctrl == ""), "/")
        parent = Path(v2) / path.lstrip("/")
        controllers = parent / "cgroup.controllers"
        if not controllers.exists() or controller not in controllers.read_text().split():
            raise Unavailable(f"the cgroup v2 tree at {parent} does not offer the {controller} controller ({controllers})")
        return cls(2, parent, controller)

    def limit(self, name: str, cores: float, period_us: int = PERIOD_US) -> Path:
        """A group `name` under the parent, its quota `cores` cores per period (made, or
        its quota reset if it exists). A budget too small for a 1 ms quota in the period
        gets a longer period (`period_for`), never a larger budget."""
        period = period_for(cores, period_us)
        quota = round(cores * period)
        group = self.parent / name
        try:
            if self.version == 2:
                _enable(self.parent, "cpu")
            group.mkdir(exist_ok=True)
            if self.version == 1:
                # The kernel checks a quota against the period in force: the quota is
                # unset first so that neither write is refused by the other's old value.
                (group / "cpu.cfs_quota_us").write_text("-1\n")
                (group / "cpu.cfs_period_us").write_text(f"{period}\n")
                (group / "cpu.cfs_quota_us").write_text(f"{quota}\n")
            else:
                (group / "cpu.max").write_text(f"{quota} {period}\n")
        except OSError as e:
            raise Unavailable(f"cannot make the cgroup {group} and set its quota: {e}") from None
        return group

    def pin(self, name: str, cpus: Iterable[int]) -> Path:
        """A cpuset group `name` under the parent whose processes run on `cpus` alone
        (made, or its CPUs reset if it exists). v1 wants its memory nodes too: the
        parent's."""
        group = self.parent / name
        try:
            if self.version == 2:
                _enable(self.parent, "cpuset")
            group.mkdir(exist_ok=True)
            if self.version == 1:
                (group / "cpuset.mems").write_text((self.parent / "cpuset.mems").read_text())
            (group / "cpuset.cpus").write_text(",".join(map(str, sorted(cpus))) + "\n")
        except OSError as e:
            raise Unavailable(f"cannot make the cpuset {group} on CPUs {sorted(cpus)}: {e}") from None
        return group

    def move(self, group: Path, pids: Iterable[int]) -> None:
        """Every process `pids` into `group` (each with all its threads)."""
        try:
            for pid in pids:
                (group / "cgroup.procs").write_text(f"{pid}\n")
        except OSError as e:
            raise Unavailable(f"cannot move process {pid} into {group}: {e}") from None


def period_for(cores: float, period_us: int = PERIOD_US) -> int:
    """The period for a budget of `cores`: `period_us`, or as much longer as the kernel's
    1 ms least quota needs (0.05 core: 20 ms), up to its 1 s longest period."""
    period = max(period_us, math.ceil(MIN_QUOTA_US / cores))
    if period > MAX_PERIOD_US:
        raise InputError(f"--cpu: {cores:g} cores is under the least budget the kernel can hold ({MIN_QUOTA_US / MAX_PERIOD_US:g} core: 1 ms per 1 s)")
    return period


@dataclass(frozen=True)
class Throttling:
    """A group's CFS bandwidth record (`cpu.stat`) since it was made: the periods in which
    it ran, those in which it used up its quota and was stopped, and the seconds it
    stood stopped (summed over its CPUs)."""

    periods: int
    throttled: int
    seconds: float

    @classmethod
    def read(cls, group: str | Path) -> Throttling:
        """v1 counts its stopped time in ns (`throttled_time`), v2 in µs (`throttled_usec`)."""
        stat = dict(line.split() for line in (Path(group) / "cpu.stat").read_text().splitlines() if line.strip())
        seconds = int(stat["throttled_time"]) / 1e9 if "throttled_time" in stat else int(stat.get("throttled_usec", 0)) / 1e6
        return cls(int(stat.get("nr_periods", 0)), int(stat.get("nr_throttled", 0)), seconds)

    def __sub__(self, before: Throttling) -> Throttling:
        return Throttling(self.periods - before.periods, self.throttled - before.throttled, self.seconds - before.seconds)


def _enable(parent: Path, controller: Controller) -> None:
    """cgroup v2: the controller delegated to the parent's children."""
    control = parent / "cgroup.subtree_control"
    if controller not in control.read_text().split():
        control.write_text(f"+{controller}\n")


def group_name(workdir: Path, role: str) -> str:
    """One group per testbed and tier: two testbeds in different folders never share one."""
    return f"tierlab-{hashlib.sha1(str(workdir.resolve()).encode()).hexdigest()[:10]}-{role}"


def release(group: str | Path, within: float = 5.0) -> None:
    """The group's processes (if any outlived `live down`) back to its parent, then the
    group removed. Nothing to do if it is gone already. A process just stopped may
    still be leaving the group (rmdir: EBUSY, seen after `live down` from the CLI,
    whose servers init reaps): retried for `within` seconds."""
    group = Path(group)
    deadline = time.monotonic() + within
    while group.exists():
        for pid in (group / "cgroup.procs").read_text().split():
            try:
                (group.parent / "cgroup.procs").write_text(f"{pid}\n")
            except ProcessLookupError:  # it ended meanwhile
                pass
        try:
            group.rmdir()
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def quota_cores(group: str | Path) -> float:
    """The cores a group's quota allows (v1 or v2), inf if unlimited."""
    group = Path(group)
    if (group / "cpu.max").exists():
        quota, period = (group / "cpu.max").read_text().split()
    else:
        quota, period = (group / "cpu.cfs_quota_us").read_text().strip(), (group / "cpu.cfs_period_us").read_text().strip()
    return math.inf if quota in ("max", "-1") else int(quota) / int(period)


def tree(pid: int) -> list[int]:
    """A process and all its descendants (a server's workers; PostgreSQL's postmaster and
    its backends)."""
    root = psutil.Process(pid)
    return [root.pid, *(c.pid for c in root.children(recursive=True))]


def pinning(budgets: dict[str, float], cpus: Iterable[int]) -> dict[str, list[int]]:
    """The CPUs each whole-core budget is pinned to, from the highest down (the load
    generator and the rest keep the lowest, where the kernel puts its own work first):
    none if the whole-core budgets would leave no CPU for the rest, nor for budgets of
    part of a core, which only a quota can hold."""
    whole = {role: round(cores) for role, cores in budgets.items() if abs(cores - round(cores)) < 1e-9}
    free = sorted(cpus, reverse=True)
    if not whole or sum(whole.values()) >= len(free):
        return {}
    out = {}
    for role, n in whole.items():
        out[role], free = sorted(free[:n]), free[n:]
    return out


@dataclass(frozen=True)
class Held:
    """How the budgets are held: each role's quota group (whose throttling a run
    records) and, where whole cores are pinned, each role's cpuset group and the CPUs
    pinned to it; `note` says why whole cores are held by quota instead (None if they
    are pinned, or none were asked for)."""

    quotas: dict[str, str] = field(default_factory=dict)
    cpusets: dict[str, str] = field(default_factory=dict)
    pinned: dict[str, list[int]] = field(default_factory=dict)
    note: str | None = None


def apply(
    budgets: dict[str, float],
    processes: dict[str, list[int]],
    workdir: Path,
    hierarchy: Hierarchy | None = None,
    cpusets: Hierarchy | None = None,
    cpus: Iterable[int] | None = None,
    pin: bool = True,
) -> Held:
    """Each tier's budget held: whole cores pinned (`pinning`, over `cpus`, by default
    this process's) with every other tier of `processes` on the CPUs left, the other
    budgets by a quota group each. Where no cpuset can be made, whole cores are held by
    quota and `Held.note` says why; Unavailable (and nothing left behind) if a quota
    group cannot be made or filled."""
    available = sorted(os.sched_getaffinity(0) if cpus is None else cpus)
    plan = pinning(budgets, available) if pin else {}
    sets, note = {}, None
    if plan:
        rest = [c for c in available if not any(c in p for p in plan.values())]
        try:
            cpusets = cpusets or Hierarchy.find(controller="cpuset")
            sets = _fill(cpusets, {role: plan.get(role, rest) for role in processes}, processes, workdir)
        except Unavailable as e:
            plan, note = {}, f"whole cores held by a quota, not pinned: {e}"
    try:
        quotas = {role: cores for role, cores in budgets.items() if role not in plan}
        made = _fill(hierarchy or Hierarchy.find(), quotas, processes, workdir) if quotas else {}
    except Unavailable:
        for group in sets.values():
            release(group)
        raise
    return Held(made, sets, plan, note)


def _fill(hierarchy: Hierarchy, sizes: Mapping[str, float | list[int]], processes: dict[str, list[int]], workdir: Path) -> dict[str, str]:
    """A group per role of `sizes` (cores of a quota, or the CPUs of a cpuset) with the
    role's processes in it, by role. Unavailable (and nothing left behind) if one
    cannot be made or filled."""
    made: dict[str, str] = {}
    try:
        for role, size in sizes.items():
            name = group_name(workdir, role)
            group = hierarchy.pin(name, size) if isinstance(size, list) else hierarchy.limit(name, size)
            made[role] = str(group)
            hierarchy.move(group, processes[role])
    except (Unavailable, OSError) as e:
        for path in made.values():
            release(path)
        raise Unavailable(str(e)) from None
    return made


@contextmanager
def kept_off(cpus: Iterable[int]) -> Iterator[None]:
    """Every thread of this process (the load generator's, the monitor's) off `cpus`
    for the block, the pinned tiers' cores; threads started inside inherit it. Each
    thread's CPUs are this thread's again afterwards."""
    off = set(cpus)
    before = os.sched_getaffinity(0)
    if not off or not before - off:
        yield
        return
    _threads_on(before - off)
    try:
        yield
    finally:
        _threads_on(before)


def _threads_on(cpus: set[int]) -> None:
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except ProcessLookupError:  # the thread ended meanwhile
            pass


BUDGET_METRIC = "budget_cores"  # the timeseries' record of a tier's budget (resource cpu)
PINNED_METRIC = "pinned_cores"  # and, where it was pinned, of the cores of its own
# And of its throttling over the run (`Throttling`, at the run's end): the periods it ran
# in, those it was stopped in, and the seconds it stood stopped.
THROTTLE_METRICS = ("periods", "throttled_periods", "throttled_s")


def series(
    cpu: dict[str, float],
    tiers: dict[str, str],
    throttling: dict[str, Throttling] | None = None,
    end: float = 0.0,
    pinned: dict[str, list[int]] | None = None,
) -> pd.DataFrame:
    """A live trace's record of the budgets in force: per tier (the model's tier name for
    each role in `tiers`), resource `cpu`, its cores at t = 0 (metric `budget_cores`),
    and for a pinned tier the CPUs of its own (`pinned_cores`); at t = `end` its
    `throttling` over the run where read (THROTTLE_METRICS): how far a quota behaved
    like a machine of its size, which never stops."""
    rows = [(0.0, tiers[role], 0, "cpu", BUDGET_METRIC, cores) for role, cores in cpu.items()]
    rows += [(0.0, tiers[role], 0, "cpu", PINNED_METRIC, float(len(c))) for role, c in (pinned or {}).items()]
    for role, t in (throttling or {}).items():
        rows += [(end, tiers[role], 0, "cpu", metric, float(v)) for metric, v in zip(THROTTLE_METRICS, (t.periods, t.throttled, t.seconds))]
    return pd.DataFrame(rows, columns=["t", "tier", "server", "resource", "metric", "value"])


def throttled(groups: dict[str, str]) -> dict[str, Throttling]:
    """Each group's `Throttling` now, by role; a group that cannot be read is left out
    (the trace then has no throttling record for it)."""
    out = {}
    for role, group in groups.items():
        try:
            out[role] = Throttling.read(group)
        except (OSError, KeyError, ValueError):
            continue
    return out


def recorded(traces: Iterable[Trace]) -> dict[str, float]:
    """The CPU budgets the traces' testbed ran under, by model tier (none: {}); an
    InputError if the traces ran under different ones (a station has one size)."""
    seen = []
    for trace in traces:
        ts = trace.timeseries
        rows = ts[(ts.resource == "cpu") & (ts.metric == BUDGET_METRIC)]
        seen.append({str(t): float(v) for t, v in zip(rows.tier, rows.value)})
    if any(s != seen[0] for s in seen[1:]):
        raise InputError(f"the traces ran under different CPU budgets ({', '.join(map(str, seen))}); calibrate from runs under one")
    return seen[0] if seen else {}
