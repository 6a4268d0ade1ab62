"""The TPC-W schema, its deterministic data generator (scaled by NUM_ITEMS and
NUM_EBS, TPC-W §4.7), and the database connections (SQLite or PostgreSQL)."""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

# The vocabulary of the data and the pages, and the pages' SQL statements by name: in
# files beside this one that the JVM bookstore (jvm/bookstore) bundles too, so both
# servers serve the same pages from the same statements (one copy of each).
_HERE = Path(__file__).parent
_VOCABULARY = json.loads((_HERE / "vocabulary.json").read_text())
SUBJECTS: list[str] = _VOCABULARY["subjects"]
WORDS: list[str] = _VOCABULARY["words"]  # title and name words; searches draw from the same list, so they find something
BACKINGS: list[str] = _VOCABULARY["backings"]
CARDS: list[str] = _VOCABULARY["cards"]
SHIP_TYPES: list[str] = _VOCABULARY["ship_types"]


def statements() -> dict[str, str]:
    """The named statements of statements.sql: each `-- name: NAME` line names the
    statement on the lines after it, up to the next name."""
    out: dict[str, str] = {}
    name = None
    for line in (_HERE / "statements.sql").read_text().splitlines():
        if line.startswith("-- name:"):
            name = line.removeprefix("-- name:").strip()
            out[name] = ""
        elif name is not None and line.strip() and not line.startswith("--"):
            out[name] = f"{out[name]} {line.strip()}".strip()
    return out


SCHEMA = """
CREATE TABLE country (co_id INTEGER PRIMARY KEY, co_name VARCHAR(50), co_exchange REAL, co_currency VARCHAR(18));
CREATE TABLE address (addr_id INTEGER PRIMARY KEY, addr_street1 VARCHAR(40), addr_street2 VARCHAR(40),
  addr_city VARCHAR(30), addr_state VARCHAR(20), addr_zip VARCHAR(10), addr_co_id INTEGER REFERENCES country);
CREATE TABLE customer (c_id INTEGER PRIMARY KEY, c_uname VARCHAR(20) UNIQUE, c_passwd VARCHAR(20),
  c_fname VARCHAR(17), c_lname VARCHAR(17), c_addr_id INTEGER REFERENCES address, c_phone VARCHAR(18),
  c_email VARCHAR(50), c_since DATE, c_last_login DATE, c_login TIMESTAMP, c_expiration TIMESTAMP,
  c_discount REAL, c_balance REAL, c_ytd_pmt REAL, c_birthdate DATE, c_data TEXT);
CREATE TABLE author (a_id INTEGER PRIMARY KEY, a_fname VARCHAR(20), a_lname VARCHAR(20), a_mname VARCHAR(20),
  a_dob DATE, a_bio TEXT);
CREATE TABLE item (i_id INTEGER PRIMARY KEY, i_title VARCHAR(60), i_a_id INTEGER REFERENCES author,
  i_pub_date DATE, i_publisher VARCHAR(60), i_subject VARCHAR(60), i_desc TEXT,
  i_related1 INTEGER, i_related2 INTEGER, i_related3 INTEGER, i_related4 INTEGER, i_related5 INTEGER,
  i_thumbnail VARCHAR(40), i_image VARCHAR(40), i_srp REAL, i_cost REAL, i_avail DATE, i_stock INTEGER,
  i_isbn CHAR(13), i_page INTEGER, i_backing VARCHAR(15), i_dimensions VARCHAR(25));
CREATE TABLE orders (o_id INTEGER PRIMARY KEY, o_c_id INTEGER REFERENCES customer, o_date TIMESTAMP,
  o_sub_total REAL, o_tax REAL, o_total REAL, o_ship_type VARCHAR(10), o_ship_date TIMESTAMP,
  o_bill_addr_id INTEGER, o_ship_addr_id INTEGER, o_status VARCHAR(15));
CREATE TABLE order_line (ol_id INTEGER, ol_o_id INTEGER REFERENCES orders, ol_i_id INTEGER REFERENCES item,
  ol_qty INTEGER, ol_discount REAL, ol_comments VARCHAR(100), PRIMARY KEY (ol_o_id, ol_id));
CREATE TABLE cc_xacts (cx_o_id INTEGER PRIMARY KEY REFERENCES orders, cx_type VARCHAR(10), cx_num VARCHAR(20),
  cx_name VARCHAR(31), cx_expire DATE, cx_auth_id CHAR(15), cx_xact_amt REAL, cx_xact_date TIMESTAMP,
  cx_co_id INTEGER);
CREATE TABLE shopping_cart (sc_id INTEGER PRIMARY KEY, sc_time TIMESTAMP);
CREATE TABLE shopping_cart_line (scl_sc_id INTEGER REFERENCES shopping_cart, scl_qty INTEGER,
  scl_i_id INTEGER REFERENCES item, PRIMARY KEY (scl_sc_id, scl_i_id));
CREATE INDEX item_subject ON item (i_subject);
CREATE INDEX item_author ON item (i_a_id);
CREATE INDEX orders_customer ON orders (o_c_id);
CREATE INDEX order_line_item ON order_line (ol_i_id);
"""
# What a run changes, which `restore` undoes: the rows it adds (carts and orders, keyed
# above the populated data's keys, `baseline`: per table its highest key then) and the
# items' columns it updates (stock, cost, images, publication date, related items: a
# copy, `item_baseline`). Customers' login stamps are not restored: no page's work
# depends on them.
GROWN = [  # (table, key column, the table whose baseline key bounds it), children first
    ("shopping_cart_line", "scl_sc_id", "shopping_cart"),
    ("shopping_cart", "sc_id", "shopping_cart"),
    ("cc_xacts", "cx_o_id", "orders"),
    ("order_line", "ol_o_id", "orders"),
    ("orders", "o_id", "orders"),
]
# The item columns the pages update (statements item_stock, admin_update, related_update).
ITEM_CHANGED = ["i_stock", "i_cost", "i_image", "i_thumbnail", "i_pub_date", "i_related1", "i_related2", "i_related3", "i_related4", "i_related5"]
BASELINE = """
CREATE TABLE baseline (b_table VARCHAR(30) PRIMARY KEY, b_top INTEGER);
CREATE TABLE item_baseline AS SELECT * FROM item;
"""
TABLES = [
    "baseline",
    "item_baseline",
    "shopping_cart_line",
    "shopping_cart",
    "cc_xacts",
    "order_line",
    "orders",
    "item",
    "author",
    "customer",
    "address",
    "country",
]


@dataclass(frozen=True)
class Database:
    """Where the data lives: `sqlite:///PATH` or `postgresql://USER@HOST:PORT/DB`."""

    url: str

    @property
    def postgres(self) -> bool:
        return self.url.startswith(("postgresql://", "postgres://"))

    def connect(self):
        """A new DB-API connection (autocommit off)."""
        if self.postgres:
            import psycopg

            return psycopg.connect(self.url, connect_timeout=5)
        if not self.url.startswith("sqlite:///"):
            raise ValueError(f"database URL {self.url!r}: use sqlite:///PATH or postgresql://USER@HOST:PORT/DB")
        conn = sqlite3.connect(self.url.removeprefix("sqlite:///"), timeout=30, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def errors(self) -> tuple[type[Exception], ...]:
        """The driver's errors (DB-API `Error`), to catch."""
        if self.postgres:
            import psycopg

            return (psycopg.Error,)
        return (sqlite3.Error,)

    def sql(self, text: str) -> str:
        """Queries are written with `?` placeholders; PostgreSQL's driver wants `%s`."""
        return text.replace("?", "%s") if self.postgres else text


def populate(db: Database, num_items: int = 1000, num_ebs: int = 1, seed: int = 1) -> dict:
    """Create the schema and fill it, deterministically for (num_items, num_ebs, seed):
    2,880 customers per EB, two addresses each, 0.9 orders per customer with 1–5 lines,
    one author per four items, 92 countries. Returns the row counts."""
    rng = random.Random(seed)
    customers, authors = 2880 * num_ebs, max(1, num_items // 4)
    today = date(2026, 1, 1)
    day = lambda back: (today - timedelta(days=back)).isoformat()  # noqa: E731
    word = lambda: rng.choice(WORDS)  # noqa: E731
    rows: dict[str, list[tuple]] = {
        "country": [(i, f"Country {i}", round(rng.uniform(0.1, 10), 4), "Currency") for i in range(1, 93)],
        "author": [
            (i, word().title(), word().title(), word()[:1].upper(), day(rng.randint(7000, 30000)), " ".join(word() for _ in range(20)))
            for i in range(1, authors + 1)
        ],
        "address": [
            (i, f"{rng.randint(1, 9999)} {word().title()} St", "", word().title(), "ST", f"{rng.randint(10000, 99999)}", rng.randint(1, 92))
            for i in range(1, 2 * customers + 1)
        ],
    }
    rows["item"] = []
    for i in range(1, num_items + 1):
        related = [rng.randint(1, num_items) for _ in range(5)]
        srp = round(rng.uniform(1, 1000), 2)
        rows["item"].append(
            (
                i,
                " ".join(word().title() for _ in range(3)),
                rng.randint(1, authors),
                day(rng.randint(0, 20000)),
                f"{word().title()} Press",
                rng.choice(SUBJECTS),
                " ".join(word() for _ in range(30)),
                *related,
                f"img{i % 100}/thumb_{i}.gif",
                f"img{i % 100}/image_{i}.gif",
                srp,
                round(srp * rng.uniform(0.5, 1), 2),
                day(-rng.randint(1, 30)),
                rng.randint(10, 30),
                f"{rng.randrange(10**12, 10**13)}",
                rng.randint(20, 9999),
                rng.choice(BACKINGS),
                "10x20x3",
            )
        )
    rows["customer"] = [
        (
            i,
            f"user{i}",
            f"pw{i}",
            word().title(),
            word().title(),
            2 * i - 1,
            f"{rng.randrange(10**9, 10**10)}",
            f"user{i}@example.com",
            day(rng.randint(1, 730)),
            day(rng.randint(0, 60)),
            day(0),
            day(-1),
            round(rng.uniform(0, 0.5), 2),
            0.0,
            round(rng.uniform(0, 1000), 2),
            day(rng.randint(6000, 30000)),
            " ".join(word() for _ in range(20)),
        )
        for i in range(1, customers + 1)
    ]
    rows["orders"], rows["order_line"], rows["cc_xacts"] = [], [], []
    for o in range(1, int(0.9 * customers) + 1):
        c = rng.randint(1, customers)
        lines = [(n, o, rng.randint(1, num_items), rng.randint(1, 300), round(rng.uniform(0, 0.3), 2), word()) for n in range(1, rng.randint(1, 5) + 1)]
        sub = round(sum(qty * rows["item"][i - 1][15] for _, _, i, qty, _, _ in lines), 2)  # i_cost × ol_qty
        rows["orders"].append(
            (
                o,
                c,
                day(rng.randint(1, 60)),
                sub,
                round(sub * 0.0825, 2),
                round(sub * 1.0825 + 3, 2),
                rng.choice(SHIP_TYPES),
                day(rng.randint(0, 7)),
                2 * c - 1,
                2 * c,
                rng.choice(["PROCESSING", "SHIPPED", "PENDING", "DENIED"]),
            )
        )
        rows["order_line"] += lines
        rows["cc_xacts"].append(
            (
                o,
                rng.choice(CARDS),
                f"{rng.randrange(10**15, 10**16)}",
                "Card Holder",
                day(-365),
                f"AUTH{o:011d}",
                round(sub * 1.0825 + 3, 2),
                day(0),
                rng.randint(1, 92),
            )
        )
    conn = db.connect()
    try:
        cur = conn.cursor()
        for t in TABLES:
            cur.execute(f"DROP TABLE IF EXISTS {t}")
        for stmt in filter(str.strip, SCHEMA.split(";")):
            cur.execute(stmt)
        for table in ["country", "author", "address", "customer", "item", "orders", "order_line", "cc_xacts"]:
            data = rows[table]
            marks = ", ".join("?" * len(data[0]))
            cur.executemany(db.sql(f"INSERT INTO {table} VALUES ({marks})"), data)
        for stmt in filter(str.strip, BASELINE.split(";")):
            cur.execute(stmt)
        tops = {bound: len(rows[bound]) if bound in rows else 0 for _, _, bound in GROWN}  # keys run 1…n
        cur.executemany(db.sql("INSERT INTO baseline VALUES (?, ?)"), sorted(tops.items()))
        conn.commit()
    finally:
        conn.close()
    return {t: len(v) for t, v in rows.items()}


def restore(db: Database) -> dict[str, int]:
    """The data as `populate` left them (GROWN): the rows runs added deleted, the items'
    columns put back; the rows deleted by table. The servers' key counters must then be
    forgotten (admin `POST /keys/forget`), or new keys would go on from the old ones.
    A database populated before baselines were kept is refused: populate it again."""
    conn = db.connect()
    try:
        cur = conn.cursor()
        try:
            cur.execute("SELECT b_table, b_top FROM baseline")
        except db.errors() as e:
            raise ValueError(f"{db.url} has no baseline table (populated by an older tierlab): start the testbed afresh to populate it again ({e})") from None
        top = dict(cur.fetchall())
        deleted = {}
        for table, key, bound in GROWN:
            cur.execute(db.sql(f"DELETE FROM {table} WHERE {key} > ?"), (top[bound],))
            deleted[table] = cur.rowcount
        put_back = ", ".join(f"{c} = b.{c}" for c in ITEM_CHANGED)
        cur.execute(f"UPDATE item SET {put_back} FROM item_baseline AS b WHERE item.i_id = b.i_id")
        conn.commit()
    finally:
        conn.close()
    return deleted
