"""Every run starts from the data as populated (`Testbed.restore`, called by every
`Testbed.run`): an order a page made is deleted again, and the server — either
runtime — then gives the next order the key it gave the first (its counters forgotten
through `POST /keys/forget`), on SQLite and on the project's PostgreSQL."""

from __future__ import annotations

import os
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tierlab.live import jvm, testbed
from tierlab.live.server.bookstore import Database

from conftest import ROOT

BUY = {"c_id": "4", "cc_type": "VISA"}  # Buy Confirm: an order of its own and its payment


def _orders(db: str) -> tuple[int, int]:
    conn = Database(db).connect()
    try:
        cur = conn.cursor()
        cur.execute("SELECT COUNT(*), MAX(o_id) FROM orders")
        count, top = cur.fetchone()
        return int(count), int(top)
    finally:
        conn.close()


def _buy(bed: testbed.Testbed) -> int:
    req = urllib.request.Request(f"http://127.0.0.1:{bed.state.port}/buy_confirm", data=urllib.parse.urlencode(BUY).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.status


@pytest.mark.parametrize("server,db", [("python", "sqlite"), ("java", "sqlite"), ("python", "postgres")])
def test_a_run_starts_from_the_populated_data_and_the_same_keys(server, db, tmp_path):
    if server == "java" and jvm.tools() is not None:
        pytest.skip(f"the JVM bookstore cannot be built here: {jvm.tools()}")
    if db == "postgres" and not (any(Path("/usr/lib/postgresql").glob("*/bin")) or os.geteuid() == 0 or os.environ.get("CI")):
        pytest.skip("PostgreSQL is not installed and cannot be (not root); CI installs it")
    # PostgreSQL's data must be reachable by its own user: under the project, beside the other live tests'.
    workdir = ROOT / ".tierlab" / "test" / "restore" if db == "postgres" else tmp_path / "live"
    with testbed.Testbed.started(workdir, db=db, server=server, threads=4, connections=2) as bed:
        bed.restore()
        populated = _orders(bed.state.db)
        assert _buy(bed) == 200
        first = _orders(bed.state.db)
        assert first == (populated[0] + 1, populated[1] + 1)
        deleted = bed.restore()
        assert deleted["orders"] == deleted["cc_xacts"] == 1
        assert _orders(bed.state.db) == populated
        assert _buy(bed) == 200
        assert _orders(bed.state.db) == first  # the same key again: the counters were forgotten
