"""The 14 TPC-W web interactions as a WSGI application.

Database access follows the paper's entity-bean server (Totok & Karamcheti §5.1): every
access is one `getConnection() … close()` through the connection pool, so Search
Results asks for a connection 101 times (one query, then an item and its author for
each of the 50 hits), Buy Request 10 times, and Buy Confirm once (one transaction).
Pages are small HTML. A session the load generator names (`X-Tierlab-Session`) keeps
its cart in its session state (`sessions.py`: this server's memory, or Redis); a
browser without one carries it in an `sc_id` cookie.

`cpu` (serve.py's `--cpu`): milliseconds of CPU a page spends before its first database
access, the paper's "CPU-consuming code snippets ... *before* the request obtains a
database connection" (§5.1), given in its "execution cycles" (≈ 1 ms each alone): Home,
Buy Request, Buy Confirm 100, Search 50, Add To Cart 25, Item 10, Cart and Register 1 —
`PAPER_CPU` (Add To Cart and Cart are one page here, shopping_cart, so it takes 25)."""

from __future__ import annotations

import html
import random
import threading
import time
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs

from ..middleware import ConnectionPool
from .data import SHIP_TYPES, SUBJECTS, Database, statements
from .sessions import LocalSessions, SessionStore

SQL = statements()


class NotFound(Exception):
    pass


class BadInput(Exception):
    """A parameter, form or cookie the page cannot take: 400, not a server error."""


# §5.1's snippets by page (milliseconds of the handling thread's CPU).
PAPER_CPU = {
    "home": 100.0,
    "buy_request": 100.0,
    "buy_confirm": 100.0,
    "execute_search": 50.0,
    "shopping_cart": 25.0,
    "product_detail": 10.0,
    "customer_registration": 1.0,
}


def parse_cpu(text: str) -> dict[str, float]:
    """`PAGE=MS,...` (e.g. `home=100,execute_search=50`) or `paper` (PAPER_CPU) as
    {page: milliseconds}; ValueError naming the item that is not one."""
    if text.strip() == "paper":
        return dict(PAPER_CPU)
    cpu = {}
    for item in filter(None, (i.strip() for i in text.split(","))):
        page, _, ms = item.partition("=")
        try:
            cpu[page.strip()] = float(ms)
        except ValueError:
            raise ValueError(f"--cpu: {item!r} is not PAGE=MILLISECONDS (e.g. home=100)") from None
        if not (0 <= cpu[page.strip()] < float("inf")):
            raise ValueError(f"--cpu: {item!r}: milliseconds must be a finite number ≥ 0")
    return cpu


def spin(ms: float) -> None:
    """Use `ms` milliseconds of this thread's CPU: under contention it takes longer, as
    real work does (a sleep would not compete for the CPU)."""
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass


# Keys are INTEGER columns: 32-bit in PostgreSQL (a larger value would fail in the
# database, and a larger one still overflow SQLite's 64 bits).
MAX_ID = 2**31 - 1


class Bookstore:
    """`server` of `servers`: the cluster's servers share one database, so each makes
    the keys ≡ server (mod servers) — no two insert the same order or cart."""

    def __init__(
        self, db: Database, pool: ConnectionPool, sessions: SessionStore | None = None, server: int = 0, servers: int = 1, cpu: dict[str, float] | None = None
    ):
        self.db, self.pool = db, pool
        self.sessions = sessions if sessions is not None else LocalSessions()
        self.server, self.servers = server, servers
        self._ids = threading.Lock()
        self._next: dict[str, int] = {}
        self.routes = {
            "/home": self.home,
            "/new_products": self.new_products,
            "/best_sellers": self.best_sellers,
            "/product_detail": self.product_detail,
            "/search_request": self.search_request,
            "/execute_search": self.execute_search,
            "/shopping_cart": self.shopping_cart,
            "/customer_registration": self.customer_registration,
            "/buy_request": self.buy_request,
            "/buy_confirm": self.buy_confirm,
            "/order_inquiry": self.order_inquiry,
            "/order_display": self.order_display,
            "/admin_request": self.admin_request,
            "/admin_confirm": self.admin_confirm,
        }
        self.cpu = {f"/{page}": ms for page, ms in (cpu or {}).items()}
        if unknown := sorted(p[1:] for p in self.cpu if p not in self.routes):
            raise ValueError(f"--cpu: no page {', '.join(unknown)}; pages: {', '.join(r[1:] for r in self.routes)}")

    # -- plumbing ---------------------------------------------------------------

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "/")
        handler = self.routes.get(path)
        if handler is None:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"no such page\n"]
        headers = [("Content-Type", "text/html; charset=utf-8")]
        session = environ.get("HTTP_X_TIERLAB_SESSION")
        try:
            args, cart = self._inputs(environ)
            state = self.sessions.load(session) if session else {}
            cart = state.get("cart") if session else cart
            spin(self.cpu.get(path, 0.0))  # before the page's first connection (§5.1)
            title, body, new_cart = handler(args, cart)
            if session:
                self.sessions.save(session, {"cart": new_cart, "visits": state.get("visits", 0) + 1})
        except NotFound as e:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [f"{e}\n".encode()]
        except BadInput as e:
            start_response("400 Bad Request", [("Content-Type", "text/plain")])
            return [f"{e}\n".encode()]
        if new_cart is not None and new_cart != cart:
            headers.append(("Set-Cookie", f"sc_id={new_cart}; Path=/"))
        start_response("200 OK", headers)
        return [f"<html><head><title>TPC-W {title}</title></head><body><h1>{title}</h1>{body}</body></html>".encode()]

    def _inputs(self, environ) -> tuple[dict[str, str], int | None]:
        """The query's and the form's parameters (the last of a repeated one), and the
        session's cart from its cookie."""
        args = {k: v[-1] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        if environ.get("REQUEST_METHOD") == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)  # the server checked it is digits
            try:
                form = environ["wsgi.input"].read(size).decode()
            except UnicodeDecodeError:
                raise BadInput("the form is not UTF-8") from None
            args.update({k: v[-1] for k, v in parse_qs(form).items()})
        try:
            cookies = SimpleCookie(environ.get("HTTP_COOKIE", ""))
        except CookieError as e:
            raise BadInput(f"unreadable cookies: {e}") from None
        return args, (self._int({"sc_id": cookies["sc_id"].value}, "sc_id") if "sc_id" in cookies else None)

    def query(self, sql: str, args: tuple = (), one: bool = False):
        """One database access: getConnection(), execute, fetch, close()."""
        with self.pool.connection() as conn:
            return self._run(conn, sql, args, one)

    def _run(self, conn, sql: str, args: tuple = (), one: bool = False):
        cur = conn.cursor()
        cur.execute(self.db.sql(sql), args)
        if cur.description is None:
            return None
        return cur.fetchone() if one else cur.fetchall()

    def forget_keys(self) -> None:
        """The key counters forgotten: seeded from the tables again at their next use
        (after `data.restore` deleted the keys they had counted to)."""
        with self._ids:
            self._next.clear()

    def _new_id(self, conn, table: str, column: str) -> int:
        """Next key of `table` ≡ server (mod servers); a process-wide counter seeded
        from the table once (statement max_COLUMN)."""
        with self._ids:
            if table not in self._next:
                top = self._run(conn, SQL[f"max_{column}"], one=True)[0] or 0
                self._next[table] = top - top % self.servers + self.server
            self._next[table] += self.servers
            return self._next[table]

    @staticmethod
    def _int(args: dict, key: str, default: int | None = None) -> int:
        """A whole number 0…MAX_ID; `default` if absent (None: it must be given)."""
        text = args.get(key)
        if text is None:
            if default is None:
                raise BadInput(f"{key} is missing")
            return default
        if not (text.isascii() and text.isdigit() and int(text) <= MAX_ID):
            raise BadInput(f"{key} must be a whole number 0…{MAX_ID}, got {text[:40]!r}")
        return int(text)

    @staticmethod
    def _list(rows, fmt) -> str:
        return "<ul>" + "".join(f"<li>{fmt(r)}</li>" for r in rows) + "</ul>"

    # -- the 14 interactions ------------------------------------------------------

    def home(self, args, cart):
        c = self._int(args, "c_id", 0)
        row = self.query(SQL["customer_name"], (c,), one=True) if c else None
        hello = f"Welcome back, {html.escape(row[0])} {html.escape(row[1])}" if row else "Welcome"
        return "Home", f"<p>{hello}</p>" + self._list(SUBJECTS, html.escape), cart

    def new_products(self, args, cart):
        subject = args.get("subject", SUBJECTS[0])
        rows = self.query(
            SQL["new_products"],
            (subject,),
        )
        return "New Products", self._list(rows, lambda r: f"{r[0]} {html.escape(r[1])} by {html.escape(r[2])} {html.escape(r[3])}"), cart

    def best_sellers(self, args, cart):
        subject = args.get("subject", SUBJECTS[0])
        latest = self.query(SQL["max_o_id"], one=True)[0] or 0
        rows = self.query(
            SQL["best_sellers"],
            (latest - 3333, subject),
        )
        return "Best Sellers", self._list(rows, lambda r: f"{r[0]} {html.escape(r[1])} ({r[2]} sold)"), cart

    def product_detail(self, args, cart):
        row = self.query(
            SQL["product_detail"],
            (self._int(args, "i_id"),),
            one=True,
        )
        if row is None:
            raise NotFound(f"no item {args.get('i_id')}")
        return (
            "Product Detail",
            f"<p>{html.escape(row[0])} by {html.escape(row[1])} {html.escape(row[2])}: {row[5]:.2f} (list {row[4]:.2f}), {row[6]} in stock</p>",
            cart,
        )

    def search_request(self, args, cart):
        return "Search", "<form action=/execute_search><input name=search_string></form>", cart

    def execute_search(self, args, cart):
        kind, text = args.get("search_type", "title"), f"%{args.get('search_string', '')}%"
        by = kind if kind in ("author", "subject") else "title"
        ids = [r[0] for r in self.query(SQL[f"search_{by}"], (text,))]
        # Pad to 50 hits with the next items, so every search makes 101 connection requests.
        ids += [(ids[-1] if ids else 0) + k + 1 for k in range(50 - len(ids))]
        found = []
        for i in ids:  # entity beans: each item, then its author, in an access of its own
            item = self.query(SQL["search_item"], (i,), one=True)
            author = self.query(SQL["search_item_author"], (item[1] if item else 0,), one=True)
            if item and author:
                found.append((i, item[0], author[1], item[2]))
        return "Search Results", self._list(found, lambda r: f"{r[0]} {html.escape(r[1])} by {html.escape(r[2])}: {r[3]:.2f}"), cart

    def shopping_cart(self, args, cart):
        if cart is None or self.query(SQL["cart_exists"], (cart,), one=True) is None:
            with self.pool.connection() as conn:
                cart = self._new_id(conn, "shopping_cart", "sc_id")
                self._run(conn, SQL["cart_insert"], (cart, _now()))
        if "i_id" in args:
            item, qty = self._int(args, "i_id"), max(1, self._int(args, "qty", 1))
            with self.pool.connection() as conn:
                self._run(conn, SQL["cart_line_delete"], (cart, item))
                self._run(conn, SQL["cart_line_insert"], (cart, qty, item))
        lines = self.query(SQL["cart_lines"], (cart,))
        self.query(SQL["cart_touch"], (_now(), cart))
        return "Shopping Cart", self._list(lines, lambda r: f"{r[2]} × {html.escape(r[1])} at {r[3]:.2f}"), cart

    def customer_registration(self, args, cart):
        return "Customer Registration", "<form method=post action=/buy_request><input name=uname></form>", cart

    def buy_request(self, args, cart):
        """Ten accesses: the customer, their login, address and country, the cart
        (made here if the session has none), its lines, and four price checks."""
        c = self._int(args, "c_id")
        cust = self.query(SQL["customer_by_uname"], (f"user{c}",), one=True)
        if cust is None:
            raise NotFound(f"no customer user{c}")
        self.query(SQL["customer_login"], (_now(), _now(7200), cust[0]))
        addr = self.query(SQL["address"], (cust[3],), one=True)
        country = self.query(SQL["country"], (addr[2],), one=True)
        with self.pool.connection() as conn:  # the session's cart, or a new one with a random item
            if cart is None or self._run(conn, SQL["cart_exists"], (cart,), one=True) is None:
                cart = self._new_id(conn, "shopping_cart", "sc_id")
                self._run(conn, SQL["cart_insert"], (cart, _now()))
                self._run(conn, SQL["cart_line_insert"], (cart, 1, random.randint(1, 1000)))
        lines = self.query(SQL["cart_items"], (cart,))
        total = 0.0
        for i, qty in (lines + [(None, 0)] * 4)[:4]:  # a price check for up to 4 lines, always 4 accesses
            price = self.query(SQL["item_cost"], (i or 0,), one=True)
            total += qty * (price[0] if price else 0.0)
        body = f"<p>{html.escape(cust[1])} {html.escape(cust[2])}, {html.escape(addr[0])}, {html.escape(addr[1])}, {html.escape(country[0])}: total {total * (1 - cust[4]):.2f}</p>"
        return "Buy Request", body, cart

    def buy_confirm(self, args, cart):
        """One transaction: the order, its lines, the card transaction, the stock, and
        the emptied cart."""
        c = self._int(args, "c_id")
        with self.pool.transaction() as conn:
            cust = self._run(conn, SQL["order_customer"], (c,), one=True)
            if cust is None:
                raise NotFound(f"no customer {c}")
            lines = self._run(
                conn,
                SQL["order_cart_lines"],
                (cart or 0,),
            )
            sub = sum(q * cost for _, q, cost, _ in lines) * (1 - cust[2])
            o = self._new_id(conn, "orders", "o_id")
            self._run(
                conn,
                SQL["order_insert"],
                (o, c, _now(), sub, sub * 0.0825, sub * 1.0825 + 3, random.choice(SHIP_TYPES), _now(86400 * 3), cust[1], cust[1], "PENDING"),
            )
            for n, (i, q, _, stock) in enumerate(lines, 1):
                self._run(conn, SQL["order_line_insert"], (n, o, i, q, cust[2], "none"))
                self._run(conn, SQL["item_stock"], (stock - q if stock - q >= 10 else stock - q + 21, i))
            self._run(
                conn,
                SQL["cc_xact_insert"],
                (o, args.get("cc_type", "VISA"), "4111111111111111", "Card Holder", _now(86400 * 365), f"AUTH{o:011d}", sub * 1.0825 + 3, _now(), 1),
            )
            self._run(conn, SQL["cart_empty"], (cart or 0,))
        return "Buy Confirm", f"<p>order {o} placed: {len(lines)} lines, {sub:.2f}</p>", cart

    def order_inquiry(self, args, cart):
        return "Order Inquiry", "<form method=post action=/order_display><input name=uname></form>", cart

    def order_display(self, args, cart):
        c = self._int(args, "c_id")
        cust = self.query(SQL["customer_login_check"], (f"user{c}", f"pw{c}"), one=True)
        order = self.query(SQL["last_order"], (cust[0] if cust else 0,), one=True)
        lines = self.query(SQL["order_lines"], (order[0] if order else 0,))
        head = f"<p>order {order[0]}: {order[2]:.2f}, {order[3]}</p>" if order else "<p>no orders</p>"
        return "Order Display", head + self._list(lines, lambda r: f"{r[2]} × {html.escape(r[1])}"), cart

    def admin_request(self, args, cart):
        row = self.query(SQL["admin_item"], (self._int(args, "i_id"),), one=True)
        if row is None:
            raise NotFound(f"no item {args.get('i_id')}")
        return "Admin Request", f"<p>{html.escape(row[0])}: {row[1]:.2f}</p>", cart

    def admin_confirm(self, args, cart):
        """One transaction: the new price and images, and the item's related items
        recomputed from the customers who bought it recently (TPC-W §2.16)."""
        i = self._int(args, "i_id")
        with self.pool.transaction() as conn:
            self._run(
                conn,
                SQL["admin_update"],
                (round(random.uniform(1, 1000), 2), f"img/image_{i}.gif", f"img/thumb_{i}.gif", _now(), i),
            )
            related = self._run(
                conn,
                SQL["related_items"],
                (i, i),
            )
            ids = [r[0] for r in related] + [i] * (5 - len(related))
            self._run(conn, SQL["related_update"], (*ids, i))
        return "Admin Confirm", f"<p>item {i} updated</p>", cart


def _now(ahead: float = 0.0) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() + ahead))
