"""The bookstore's session stores and its cluster-safe keys, without a server."""

from __future__ import annotations

import sqlite3

from tierlab.live.server.bookstore import Bookstore, Database
from tierlab.live.server.bookstore.sessions import LocalSessions


def test_local_sessions_keep_state_in_this_process_only():
    here, there = LocalSessions(), LocalSessions()
    assert here.load("7") == {} and here.created == 1
    here.save("7", {"cart": 3, "visits": 1})
    assert here.load("7") == {"cart": 3, "visits": 1} and here.created == 1
    # Another server never saw the session: it starts afresh there (no migration to count).
    assert there.load("7") == {} and (there.created, there.migrations) == (1, 0)


def test_a_clusters_servers_make_disjoint_keys_from_one_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with sqlite3.connect(tmp_path / "db.sqlite") as c:
        c.execute("CREATE TABLE orders (o_id INTEGER)")
        c.execute("INSERT INTO orders VALUES (10)")
    db = Database(url)
    conn = db.connect()
    stores = [Bookstore(db, pool=None, server=k, servers=3) for k in range(3)]  # type: ignore[arg-type]
    keys = [[s._new_id(conn, "orders", "o_id") for _ in range(4)] for s in stores]
    flat = [k for ks in keys for k in ks]
    assert len(set(flat)) == len(flat) and min(flat) > 10
    assert all(k % 3 == server for server, ks in enumerate(keys) for k in ks)
