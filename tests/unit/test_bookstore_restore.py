"""Every live run starts from the data as populated (`data.restore`, issue 41: a database
grown by earlier runs costs each request more): the rows a run adds are deleted, the
items' columns it updates put back, and the bookstore's key counters, once forgotten,
count from the populated keys again."""

from __future__ import annotations

import pytest

from tierlab.live.server.bookstore import Bookstore, Database, populate
from tierlab.live.server.bookstore.data import GROWN, ITEM_CHANGED, TABLES, restore, statements


def _snapshot(db: Database) -> dict[str, list[tuple]]:
    conn = db.connect()
    try:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}
    finally:
        conn.close()


def test_restore_undoes_a_runs_writes_and_forgotten_keys_count_from_the_populated_ones(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'bookstore.db'}")
    counts = populate(db, num_items=100)
    populated = _snapshot(db)
    store = Bookstore(db, None)  # type: ignore[arg-type]  # no pool: its key counters alone
    conn = db.connect()
    first = store._new_id(conn, "orders", "o_id")
    assert first == counts["orders"] + 1
    # A run's writes: an order with its line and payment, a cart with a line, items changed.
    conn.execute("INSERT INTO orders (o_id, o_c_id) VALUES (?, 1)", (first,))
    conn.execute("INSERT INTO order_line (ol_id, ol_o_id, ol_i_id) VALUES (1, ?, 7)", (first,))
    conn.execute("INSERT INTO cc_xacts (cx_o_id) VALUES (?)", (first,))
    cart = store._new_id(conn, "shopping_cart", "sc_id")
    conn.execute("INSERT INTO shopping_cart VALUES (?, '2026-11-28')", (cart,))
    conn.execute("INSERT INTO shopping_cart_line VALUES (?, 2, 7)", (cart,))
    conn.execute("UPDATE item SET i_stock = 0, i_related1 = 3, i_pub_date = '2026-11-28' WHERE i_id = 7")
    conn.commit()
    assert _snapshot(db) != populated
    deleted = restore(db)
    assert deleted == {"shopping_cart_line": 1, "shopping_cart": 1, "cc_xacts": 1, "order_line": 1, "orders": 1}
    assert _snapshot(db) == populated  # every table, row for row
    assert store._new_id(conn, "orders", "o_id") == first + 1  # not forgotten: counting on past the deleted key
    store.forget_keys()
    assert store._new_id(conn, "orders", "o_id") == first  # forgotten: from the populated keys again
    conn.close()


def test_a_database_without_a_baseline_is_refused_with_the_fix(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'old.db'}")
    populate(db, num_items=100)
    conn = db.connect()
    conn.execute("DROP TABLE baseline")
    conn.close()
    with pytest.raises(ValueError, match="no baseline table .* populate it again"):
        restore(db)


def test_every_item_column_a_page_updates_is_put_back():
    import re

    updated = {
        c.strip().split(" = ")[0]
        for sql in statements().values()
        if sql.startswith("UPDATE item SET")
        for c in re.split(r",", sql.split(" SET ")[1].split(" WHERE ")[0])
    }
    assert updated == set(ITEM_CHANGED)
    grown = {sql.split()[2] for sql in statements().values() if sql.startswith("INSERT INTO")}
    assert grown == {table for table, _, _ in GROWN}  # every table a page inserts into is restored
