"""The bookstore's connection limit (`live up --connection-limit`): the connections it
holds at once, which bound the sessions open at once since each keeps its connection
through its thinks (investigations/twin/results/pinned_core_placement). Refused before
anything starts where the server cannot hold it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierlab.errors import InputError
from tierlab.live import lifecycle


@pytest.mark.parametrize(
    ("server", "limit", "why"),
    [("python", 0, "at least 1"), ("java", -5, "at least 1"), ("python", 1001, "select"), ("python", 5000, "use --server java")],
)
def test_a_limit_the_server_cannot_hold_is_refused_before_anything_starts(tmp_path, server, limit, why):
    with pytest.raises(InputError, match=why):
        lifecycle.up(tmp_path / "live", server=server, connection_limit=limit)
    assert not (tmp_path / "live").exists()


def test_the_limit_reaches_the_python_servers_command_line(tmp_path):
    cmd = lifecycle.server_command("python", Path(tmp_path), "sqlite:///x.db", 1, 2, 8, 4, "transaction", "--connection-limit", "700")
    assert cmd[cmd.index("--connection-limit") + 1] == "700"
    # The default the state records, unset: the server's own (CONNECTION_LIMIT).
    assert lifecycle.State(1, 1, 2, "sqlite:///x.db", "sqlite", str(tmp_path), "log").connection_limit is None
