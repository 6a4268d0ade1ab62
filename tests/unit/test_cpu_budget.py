"""CPU budgets (issue 41 item 1) against fake cgroup trees in tmp folders, v1 and v2: the
files written, the hierarchy found from /proc's files, the groups released, and a
failure said, never swallowed."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

import tierlab
from tierlab.errors import InputError
from tierlab.live import cpu_budget, lifecycle
from tierlab.live.cpu_budget import Hierarchy, Unavailable

from conftest import EXAMPLES


def _kernel_rmdir(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel removes a group's control files with it; a tmp folder keeps them."""
    monkeypatch.setattr(Path, "rmdir", lambda self: shutil.rmtree(self))


def _v1(tmp_path: Path, own: str = "/") -> Hierarchy:
    mounts = tmp_path / "mounts"
    mounts.write_text(
        f"cgroup {tmp_path}/cpuacct cgroup rw,relatime,cpuacct 0 0\ncgroup {tmp_path}/cpu cgroup rw,relatime,cpu 0 0\ncgroup2 {tmp_path}/unified cgroup2 rw 0 0\n"
    )
    cgroup = tmp_path / "cgroup"
    cgroup.write_text(f"2:cpuacct:/\n1:cpu:{own}\n0::/\n")
    (tmp_path / "cpu" / own.lstrip("/")).mkdir(parents=True, exist_ok=True)
    return Hierarchy.find(mounts, cgroup)


def _v2(tmp_path: Path, controllers: str = "cpuset cpu io memory pids") -> Hierarchy:
    mounts = tmp_path / "mounts"
    mounts.write_text(f"cgroup2 {tmp_path}/cg cgroup2 rw,nosuid 0 0\n")
    cgroup = tmp_path / "cgroup"
    cgroup.write_text("0::/user.slice\n")
    parent = tmp_path / "cg" / "user.slice"
    parent.mkdir(parents=True)
    (parent / "cgroup.controllers").write_text(controllers + "\n")
    (parent / "cgroup.subtree_control").write_text("memory\n")
    return Hierarchy.find(mounts, cgroup)


def test_parse_reads_cores_per_tier_and_names_what_is_wrong():
    assert cpu_budget.parse("app=0.5, db=1.5") == {"app": 0.5, "db": 1.5}
    for bad, said in [("web=1", "TIER=CORES"), ("app", "TIER=CORES"), ("app=x", "a number"), ("app=0", "positive"), ("app=1,app=2", "twice"), ("", "at least")]:
        with pytest.raises(InputError, match=said):
            cpu_budget.parse(bad)


def test_v1_group_under_this_process_cgroup_with_its_quota(tmp_path):
    h = _v1(tmp_path, "/engineers/me")
    assert h.version == 1 and h.parent == tmp_path / "cpu" / "engineers" / "me"
    group = h.limit("tierlab-x-app", 0.3)
    assert (group / "cpu.cfs_period_us").read_text() == "10000\n"
    assert (group / "cpu.cfs_quota_us").read_text() == "3000\n"
    assert cpu_budget.quota_cores(group) == pytest.approx(0.3)
    h.move(group, [4242])
    assert (group / "cgroup.procs").read_text() == "4242\n"


def test_v2_group_enables_the_controller_and_writes_cpu_max(tmp_path):
    h = _v2(tmp_path)
    assert h.version == 2 and h.parent == tmp_path / "cg" / "user.slice"
    group = h.limit("tierlab-x-db", 0.5)
    assert (h.parent / "cgroup.subtree_control").read_text() == "+cpu\n"
    assert (group / "cpu.max").read_text() == "5000 10000\n"
    assert cpu_budget.quota_cores(group) == pytest.approx(0.5)
    cpusets = Hierarchy.find(tmp_path / "mounts", tmp_path / "cgroup", controller="cpuset")
    assert cpusets.parent == h.parent  # one tree: a group has both controllers' files
    pinned = cpusets.pin("tierlab-x-db", [3, 2])
    assert pinned == group and (group / "cpuset.cpus").read_text() == "2,3\n"
    assert (h.parent / "cgroup.subtree_control").read_text() == "+cpuset\n"  # the fake file keeps the last write


def test_a_small_budget_gets_a_longer_period_never_a_larger_quota(tmp_path):
    h = _v1(tmp_path, "/")
    group = h.limit("tierlab-x-app", 0.05)  # 0.5 ms in 10 ms is under the kernel's 1 ms
    assert (group / "cpu.cfs_period_us").read_text() == "20000\n"
    assert (group / "cpu.cfs_quota_us").read_text() == "1000\n"
    assert cpu_budget.quota_cores(group) == pytest.approx(0.05)
    with pytest.raises(InputError, match="least budget"):
        cpu_budget.parse("app=0.0005")


def test_throttling_reads_either_version_and_subtracts(tmp_path):
    (tmp_path / "cpu.stat").write_text("nr_periods 400\nnr_throttled 60\nthrottled_time 2700000000\n")
    v1 = cpu_budget.Throttling.read(tmp_path)
    assert v1 == cpu_budget.Throttling(400, 60, 2.7)
    (tmp_path / "cpu.stat").write_text("usage_usec 9\nuser_usec 5\nsystem_usec 4\nnr_periods 500\nnr_throttled 70\nthrottled_usec 3000000\n")
    v2 = cpu_budget.Throttling.read(tmp_path)
    assert v2 == cpu_budget.Throttling(500, 70, 3.0)
    assert v2 - v1 == cpu_budget.Throttling(100, 10, pytest.approx(0.3))
    rows = cpu_budget.series({"app": 1.0}, {"app": "web"}, {"app": v1}, end=30.0)
    assert rows.set_index("metric").value.to_dict() == {"budget_cores": 1.0, "periods": 400.0, "throttled_periods": 60.0, "throttled_s": 2.7}
    assert rows.set_index("metric").t.to_dict() == {"budget_cores": 0.0, "periods": 30.0, "throttled_periods": 30.0, "throttled_s": 30.0}


def test_no_cpu_controller_is_unavailable_with_the_reason(tmp_path):
    with pytest.raises(Unavailable, match="does not offer the cpu controller"):
        _v2(tmp_path, controllers="memory pids")
    (tmp_path / "mounts").write_text("proc /proc proc rw 0 0\n")
    with pytest.raises(Unavailable, match="no cgroup hierarchy"):
        Hierarchy.find(tmp_path / "mounts", tmp_path / "cgroup")


def test_release_moves_survivors_to_the_parent_and_removes_the_group(tmp_path, monkeypatch):
    _kernel_rmdir(monkeypatch)
    h = _v1(tmp_path)
    group = h.limit("tierlab-x-app", 1.0)
    (group / "cgroup.procs").write_text("77\n")
    cpu_budget.release(group)
    assert not group.exists()
    assert (h.parent / "cgroup.procs").read_text() == "77\n"
    cpu_budget.release(group)  # gone already: nothing to do


def test_apply_makes_one_group_per_tier_and_undoes_all_on_a_failure(tmp_path, monkeypatch):
    _kernel_rmdir(monkeypatch)
    h = _v1(tmp_path)
    held = cpu_budget.apply({"app": 0.5, "db": 0.25}, {"app": [10], "db": [20]}, tmp_path / "live", h, cpus=[0, 1])
    groups = held.quotas
    assert set(groups) == {"app", "db"} and held.cpusets == {} and held.pinned == {} and held.note is None
    assert cpu_budget.quota_cores(groups["db"]) == pytest.approx(0.25)
    assert Path(groups["app"]).name == cpu_budget.group_name(tmp_path / "live", "app")
    for g in groups.values():
        cpu_budget.release(g)
    # A process that cannot be moved (the kernel refuses it) leaves no group behind.
    moved = Hierarchy.move

    def refuse(self, group, pids):
        if group.name.endswith("-db"):
            (group / "cgroup.procs").write_text("")  # the kernel's file, empty
            raise Unavailable(f"cannot move process {pids[0]} into {group}: Permission denied")
        moved(self, group, pids)

    monkeypatch.setattr(Hierarchy, "move", refuse)
    with pytest.raises(Unavailable, match="cannot move process 20"):
        cpu_budget.apply({"app": 0.5, "db": 0.25}, {"app": [10], "db": [20]}, tmp_path / "other", h, cpus=[0, 1])
    assert not any(h.parent.glob(cpu_budget.group_name(tmp_path / "other", "*")))


def _v1_cpuset(tmp_path: Path) -> Hierarchy:
    mounts = tmp_path / "mounts"
    mounts.write_text(f"cgroup {tmp_path}/cpu cgroup rw,relatime,cpu 0 0\ncgroup {tmp_path}/cpuset cgroup rw,relatime,cpuset 0 0\n")
    cgroup = tmp_path / "cgroup"
    cgroup.write_text("3:cpuset:/\n1:cpu:/\n")
    (tmp_path / "cpuset").mkdir()
    (tmp_path / "cpuset" / "cpuset.mems").write_text("0\n")
    (tmp_path / "cpu").mkdir(exist_ok=True)
    return Hierarchy.find(mounts, cgroup, controller="cpuset")


def test_whole_cores_are_pinned_from_the_top_only_while_a_core_is_left_for_the_rest():
    assert cpu_budget.pinning({"app": 1.0}, [0, 1]) == {"app": [1]}
    assert cpu_budget.pinning({"app": 1.0, "db": 2.0}, range(4)) == {"app": [3], "db": [1, 2]}
    assert cpu_budget.pinning({"app": 1.0, "db": 0.5}, [0, 1]) == {"app": [1]}  # a part of a core: a quota
    assert cpu_budget.pinning({"app": 1.0, "db": 1.0}, [0, 1]) == {}  # nothing left for the load generator
    assert cpu_budget.pinning({"app": 2.0}, [0, 1]) == {}
    assert cpu_budget.pinning({"app": 0.5}, [0, 1]) == {}


def test_a_pinned_tier_gets_its_cores_and_every_other_tier_the_rest(tmp_path, monkeypatch):
    _kernel_rmdir(monkeypatch)
    cpusets = _v1_cpuset(tmp_path)
    assert cpusets.controller == "cpuset" and cpusets.parent == tmp_path / "cpuset"
    quotas = Hierarchy.find(tmp_path / "mounts", tmp_path / "cgroup")
    assert quotas.parent == tmp_path / "cpu"
    held = cpu_budget.apply({"app": 1.0}, {"app": [10], "db": [20, 21]}, tmp_path / "live", quotas, cpusets, cpus=[0, 1])
    assert held.pinned == {"app": [1]} and held.quotas == {} and held.note is None
    app, db = (Path(held.cpusets[r]) for r in ("app", "db"))
    assert (app / "cpuset.cpus").read_text() == "1\n" and (app / "cpuset.mems").read_text() == "0\n"
    assert (db / "cpuset.cpus").read_text() == "0\n" and (db / "cgroup.procs").read_text() == "21\n"  # the last write: each pid moved
    # A fractional db budget beside the pinned app: a quota, on the CPUs left.
    held = cpu_budget.apply({"app": 1.0, "db": 0.5}, {"app": [10], "db": [20]}, tmp_path / "live2", quotas, cpusets, cpus=[0, 1])
    assert set(held.cpusets) == {"app", "db"} and set(held.quotas) == {"db"} and cpu_budget.quota_cores(held.quotas["db"]) == pytest.approx(0.5)
    for group in [*held.quotas.values(), *held.cpusets.values()]:
        cpu_budget.release(group)
        assert not Path(group).exists()


def test_without_a_cpuset_whole_cores_are_held_by_a_quota_and_it_says_why(tmp_path, monkeypatch):
    quotas = _v1(tmp_path)  # its mounts have no cpuset
    with pytest.raises(Unavailable, match="cpuset controller"):
        Hierarchy.find(tmp_path / "mounts", tmp_path / "cgroup", controller="cpuset")
    found = Hierarchy.find.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(Hierarchy, "find", classmethod(lambda cls, controller="cpu": found(cls, tmp_path / "mounts", tmp_path / "cgroup", controller)))
    held = cpu_budget.apply({"app": 1.0}, {"app": [10]}, tmp_path / "live", quotas, cpus=[0, 1])
    assert held.pinned == {} and held.cpusets == {} and cpu_budget.quota_cores(held.quotas["app"]) == pytest.approx(1.0)
    assert held.note is not None and "not pinned" in held.note and "cpuset controller" in held.note
    # Asked not to pin, it does not: a quota, and nothing to say.
    held = cpu_budget.apply({"app": 1.0}, {"app": [10]}, tmp_path / "live2", quotas, cpus=[0, 1], pin=False)
    assert held.pinned == {} and held.note is None and set(held.quotas) == {"app"}


def test_kept_off_moves_every_thread_of_this_process_and_back():
    mine = os.sched_getaffinity(0)
    if len(mine) < 2:
        pytest.skip(f"this process may run on one CPU only ({sorted(mine)}): nothing to keep off")
    off = max(mine)
    seen = {}
    with cpu_budget.kept_off([off]):
        worker = threading.Thread(target=lambda: seen.update(inside=os.sched_getaffinity(0)))
        worker.start()
        worker.join()
        seen["main"] = os.sched_getaffinity(0)
    assert seen == {"inside": mine - {off}, "main": mine - {off}}
    assert os.sched_getaffinity(0) == mine


def test_a_model_states_its_tiers_budgets_and_a_budget_its_station():
    model = tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_changes({"tiers.app.stations.cpu.speed": 0.25})
    assert cpu_budget.from_model(model) == {"app": 0.5, "db": 2.0}
    assert cpu_budget.station(0.5) == {"cores": 1, "speed": 0.5}
    assert cpu_budget.station(1.5) == {"cores": 2, "speed": 0.75}
    assert cpu_budget.station(2.0) == {"cores": 2, "speed": 1.0}


def test_a_db_budget_on_sqlite_is_refused_before_anything_starts(tmp_path):
    with pytest.raises(InputError, match="SQLite runs inside the bookstore's process"):
        lifecycle.up(tmp_path / "live", db="sqlite", cpu={"app": 0.5, "db": 0.5})
    assert not (tmp_path / "live").exists()


def test_a_trace_records_its_budgets_and_runs_under_different_ones_are_refused():
    def trace(cpu: dict[str, float]) -> SimpleNamespace:
        monitor = pd.DataFrame([(0.1, "app", 0, "cpu", "utilization", 0.2)], columns=["t", "tier", "server", "resource", "metric", "value"])
        return SimpleNamespace(timeseries=pd.concat([monitor, cpu_budget.series(cpu, {"app": "web", "db": "pg"})], ignore_index=True))

    both = trace({"app": 0.5, "db": 0.25})
    assert cpu_budget.recorded([both, both]) == {"web": 0.5, "pg": 0.25}
    assert cpu_budget.recorded([]) == {}
    with pytest.raises(InputError, match="different CPU budgets"):
        cpu_budget.recorded([both, trace({"app": 0.5})])
