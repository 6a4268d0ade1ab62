"""Where the testbed picks its ports: below the kernel's ephemeral range, which outgoing
connections draw from (tierlab.live.lifecycle.free_ports)."""

from __future__ import annotations

from tierlab.live.lifecycle import LOWEST_PORT, _ephemeral_low


def test_the_ephemeral_range_is_read_from_the_kernel_file(tmp_path):
    f = tmp_path / "ip_local_port_range"
    f.write_text("40000\t60999\n")
    assert _ephemeral_low(f) == 40000


def test_without_the_file_the_range_is_taken_to_start_at_32768(tmp_path):
    assert _ephemeral_low(tmp_path / "missing") == 32768
    (tmp_path / "bad").write_text("")
    assert _ephemeral_low(tmp_path / "bad") == 32768


def test_a_range_starting_low_still_leaves_a_thousand_ports_to_draw_from(tmp_path):
    f = tmp_path / "ip_local_port_range"
    f.write_text("1024 65535\n")
    assert _ephemeral_low(f) == LOWEST_PORT + 1000
