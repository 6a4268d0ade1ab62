"""The resource guard's reading of what this process may use (model/limits.py): its
address-space limit, its cgroup's memory limit (v1 and v2, found through
/proc/self/cgroup and mountinfo, every level up to the root) and available memory."""

from __future__ import annotations

import resource

import psutil
import pytest

from tierlab.model import limits

GiB = 2**30


def fake_proc(tmp_path, cgroup: str, mountinfo: str):
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    (proc / "mountinfo").write_text(mountinfo)
    return proc


def level(d, files: dict[str, str]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)


def test_cgroup_v2_every_level_limit_less_working_set(tmp_path):
    proc = fake_proc(
        tmp_path,
        "0::/user.slice/app.scope\n",
        "35 24 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
    )
    fs = tmp_path / "sys/fs/cgroup"
    level(fs, {"memory.max": "max\n"})  # the root: no limit
    level(fs / "user.slice", {"memory.max": f"{8 * GiB}\n", "memory.current": f"{3 * GiB}\n", "memory.stat": "anon 1\ninactive_file 0\n"})
    stat = f"anon {GiB}\nfile {GiB}\ninactive_file {GiB // 4}\n"
    level(fs / "user.slice/app.scope", {"memory.max": f"{2 * GiB}\n", "memory.current": f"{GiB}\n", "memory.stat": stat})
    found = limits.cgroup_limits(proc, tmp_path)
    # Its own: 2 GiB less (1 GiB less 0.25 GiB of droppable cache); its parent's: 8 - 3 GiB.
    assert [lim.bytes for lim in found] == [1.25 * GiB, 5 * GiB]
    assert found[0].what == f"its cgroup's memory limit, 2.15 GB in {fs}/user.slice/app.scope/memory.max, less the 805 MB the group uses"


def test_cgroup_v1_memory_hierarchy_and_its_unlimited_value(tmp_path):
    proc = fake_proc(
        tmp_path,
        "5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n",
        "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
    )
    fs = tmp_path / "sys/fs/cgroup/memory"
    level(fs, {"memory.limit_in_bytes": "9223372036854771712\n"})
    level(fs / "docker", {"memory.limit_in_bytes": "9223372036854771712\n"})
    stat = f"cache {GiB}\ntotal_inactive_file {GiB}\n"
    level(fs / "docker/abc", {"memory.limit_in_bytes": f"{4 * GiB}\n", "memory.usage_in_bytes": f"{3 * GiB}\n", "memory.stat": stat})
    found = limits.cgroup_limits(proc, tmp_path)
    assert [lim.bytes for lim in found] == [2 * GiB]  # no v2 mount: its line is skipped
    assert f"4.29 GB in {fs}/docker/abc/memory.limit_in_bytes" in found[0].what


def test_a_mount_that_shows_only_the_own_cgroup(tmp_path):
    """In a container with a cgroup namespace the mount's root is the process's cgroup."""
    proc = fake_proc(tmp_path, "0::/kubepods/pod1\n", "40 30 0:31 /kubepods/pod1 /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n")
    level(tmp_path / "sys/fs/cgroup", {"memory.max": f"{GiB}\n", "memory.current": "0\n", "memory.stat": ""})
    assert [lim.bytes for lim in limits.cgroup_limits(proc, tmp_path)] == [GiB]


def test_no_cgroup_to_read(tmp_path):
    assert limits.cgroup_limits(tmp_path / "nowhere", tmp_path) == []


@pytest.fixture
def address_space_limit():
    """Lower this process's soft RLIMIT_AS to 1 GiB above what it maps, for one test."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    mapped = psutil.Process().memory_info().vms
    if hard != resource.RLIM_INFINITY and hard < mapped + GiB:
        pytest.skip("the hard limit leaves no room to lower the soft one to")
    resource.setrlimit(resource.RLIMIT_AS, (mapped + GiB, hard))
    try:
        yield mapped + GiB
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def test_the_address_space_limit_binds_when_lowest(address_space_limit):
    lim = limits.memory_limit()
    assert "ulimit -v" in lim.what, lim
    # What is left under it: the limit less what the process maps now (a little more by now).
    assert 0.9 * GiB < lim.bytes <= GiB


def test_without_limits_the_available_memory_binds():
    if resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY or limits.cgroup_limits():
        pytest.skip("this machine limits the process")
    lim = limits.memory_limit()
    assert lim.what == "the machine's available memory"
    assert lim.bytes == pytest.approx(psutil.virtual_memory().available, rel=0.1)
