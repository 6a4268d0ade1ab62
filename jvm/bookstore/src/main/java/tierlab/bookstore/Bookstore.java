package tierlab.bookstore;

import jakarta.servlet.ServletException;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * The 14 TPC-W web interactions, page for page those of the Python bookstore
 * (python/tierlab/live/server/bookstore/app.py), from the same named statements.
 *
 * <p>Database access follows the paper's entity-bean server (Totok &amp; Karamcheti
 * §5.1): every access is one getConnection() … close(), so Search Results asks for a
 * connection 101 times, Buy Request 10 times, Buy Confirm once (one transaction). A
 * session the load generator names (X-Tierlab-Session) keeps its cart in its session
 * state; a browser without one carries it in an sc_id cookie.
 */
final class Bookstore extends HttpServlet {
    private static final long serialVersionUID = 1L;
    /** Keys are INTEGER columns: 32-bit in PostgreSQL. */
    static final long MAX_ID = Integer.MAX_VALUE;
    private static final Map<String, String> SQL = Shared.statements();
    private static final List<String> SUBJECTS = Shared.vocabulary("subjects");
    private static final List<String> SHIP_TYPES = Shared.vocabulary("ship_types");
    private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss").withZone(ZoneOffset.UTC);

    static final class NotFound extends Exception {
        private static final long serialVersionUID = 1L;

        NotFound(String message) {
            super(message);
        }
    }

    /** A parameter, form or cookie the page cannot take: 400, not a server error. */
    static final class BadInput extends Exception {
        private static final long serialVersionUID = 1L;

        BadInput(String message) {
            super(message);
        }
    }

    /** A page: its title, its body, and the cart after it. */
    record Page(String title, String body, Long cart) {}

    @FunctionalInterface
    interface Handler {
        Page handle(Map<String, String> args, Long cart) throws SQLException, NotFound, BadInput;
    }

    private final transient DataSource db;
    private final transient Sessions sessions;
    private final int server;
    private final int servers;
    private final transient Map<String, Long> next = new HashMap<>();
    private final transient Map<String, Handler> routes = new HashMap<>();

    Bookstore(DataSource db, Sessions sessions, int server, int servers) {
        this.db = db;
        this.sessions = sessions;
        this.server = server;
        this.servers = servers;
        routes.put("/home", this::home);
        routes.put("/new_products", this::newProducts);
        routes.put("/best_sellers", this::bestSellers);
        routes.put("/product_detail", this::productDetail);
        routes.put("/search_request", (a, c) -> new Page("Search", "<form action=/execute_search><input name=search_string></form>", c));
        routes.put("/execute_search", this::executeSearch);
        routes.put("/shopping_cart", this::shoppingCart);
        routes.put("/customer_registration", (a, c) -> new Page("Customer Registration", "<form method=post action=/buy_request><input name=uname></form>", c));
        routes.put("/buy_request", this::buyRequest);
        routes.put("/buy_confirm", this::buyConfirm);
        routes.put("/order_inquiry", (a, c) -> new Page("Order Inquiry", "<form method=post action=/order_display><input name=uname></form>", c));
        routes.put("/order_display", this::orderDisplay);
        routes.put("/admin_request", this::adminRequest);
        routes.put("/admin_confirm", this::adminConfirm);
    }

    // -- plumbing -------------------------------------------------------------------

    /** The pages' paths. */
    java.util.Set<String> pages() {
        return routes.keySet();
    }

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse res) throws ServletException, IOException {
        Handler handler = routes.get(req.getRequestURI());
        if (handler == null) {
            plain(res, 404, "no such page");
            return;
        }
        if (req.getContentLengthLong() > Main.MAX_BODY) { // what Tomcat would not parse (maxPostSize): refused, as the Python server refuses it
            plain(res, 413, "the request body exceeds " + Main.MAX_BODY + " bytes");
            return;
        }
        String session = req.getHeader("X-Tierlab-Session");
        boolean named = session != null && !session.isEmpty();
        Page page;
        Long cart;
        try {
            Map<String, String> args = arguments(req);
            Sessions.State state = named ? sessions.load(session) : null;
            cart = named ? (state == null ? null : state.cart()) : cookieCart(req);
            page = handler.handle(args, cart);
            if (named) {
                sessions.save(session, new Sessions.State(page.cart(), (state == null ? 0 : state.visits()) + 1));
            }
        } catch (NotFound | BadInput e) {
            plain(res, e instanceof NotFound ? 404 : 400, e.getMessage());
            return;
        } catch (SQLException e) {
            throw new ServletException(e);
        }
        res.setStatus(200);
        res.setContentType("text/html; charset=utf-8");
        if (page.cart() != null && !page.cart().equals(cart)) {
            res.addHeader("Set-Cookie", "sc_id=" + page.cart() + "; Path=/");
        }
        res.getOutputStream().write(("<html><head><title>TPC-W " + page.title() + "</title></head><body><h1>" + page.title() + "</h1>" + page.body() + "</body></html>").getBytes(StandardCharsets.UTF_8));
    }

    static void plain(HttpServletResponse res, int status, String text) throws IOException {
        res.setStatus(status);
        res.setContentType("text/plain");
        res.getOutputStream().write((text + "\n").getBytes(StandardCharsets.UTF_8));
    }

    /** The query's and the form's parameters, the last non-blank value of each (Python's parse_qs drops blank ones). */
    private static Map<String, String> arguments(HttpServletRequest req) throws BadInput {
        try {
            req.setCharacterEncoding("UTF-8");
        } catch (IOException e) {
            throw new BadInput("the form is not UTF-8");
        }
        Map<String, String> args = new HashMap<>();
        Map<String, String[]> given;
        try {
            given = req.getParameterMap();
        } catch (IllegalStateException e) { // Tomcat's InvalidParameterException: a chunked body too large, a bad encoding
            throw new BadInput("unreadable parameters: " + e.getMessage());
        }
        for (Map.Entry<String, String[]> e : given.entrySet()) {
            for (String v : e.getValue()) {
                if (!v.isEmpty()) {
                    args.put(e.getKey(), v);
                }
            }
        }
        return args;
    }

    private static Long cookieCart(HttpServletRequest req) throws BadInput {
        Cookie[] cookies = req.getCookies();
        if (cookies == null) {
            return null;
        }
        for (Cookie c : cookies) {
            if (c.getName().equals("sc_id")) {
                return integer(Map.of("sc_id", c.getValue()), "sc_id", null);
            }
        }
        return null;
    }

    /** A whole number 0…MAX_ID; {@code fallback} if absent (null: it must be given). */
    static long integer(Map<String, String> args, String key, Long fallback) throws BadInput {
        String text = args.get(key);
        if (text == null) {
            if (fallback == null) {
                throw new BadInput(key + " is missing");
            }
            return fallback;
        }
        boolean digits = !text.isEmpty() && text.chars().allMatch(ch -> ch >= '0' && ch <= '9');
        String stripped = text.replaceFirst("^0+(?=.)", "");
        if (!digits || stripped.length() > 10 || Long.parseLong(stripped) > MAX_ID) {
            throw new BadInput(key + " must be a whole number 0…" + MAX_ID + ", got '" + text.substring(0, Math.min(40, text.length())) + "'");
        }
        return Long.parseLong(stripped);
    }

    /** The statement's rows (null for one that returns none), each value as Python's drivers give it: Long, Double or String. */
    private static List<Object[]> run(Connection c, String name, Object... args) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(SQL.get(name))) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i] instanceof Long l && l <= MAX_ID && l >= Integer.MIN_VALUE ? Integer.valueOf(l.intValue()) : args[i]);
            }
            if (!ps.execute()) {
                return null;
            }
            List<Object[]> rows = new ArrayList<>();
            try (ResultSet rs = ps.getResultSet()) {
                int n = rs.getMetaData().getColumnCount();
                while (rs.next()) {
                    Object[] row = new Object[n];
                    for (int k = 0; k < n; k++) {
                        Object v = rs.getObject(k + 1);
                        row[k] = v instanceof Integer || v instanceof Short ? Long.valueOf(((Number) v).longValue()) : v instanceof Float f ? Double.valueOf(f.doubleValue()) : v;
                    }
                    rows.add(row);
                }
            }
            return rows;
        }
    }

    private static Object[] one(Connection c, String name, Object... args) throws SQLException {
        List<Object[]> rows = run(c, name, args);
        return rows == null || rows.isEmpty() ? null : rows.get(0);
    }

    /** One database access: getConnection(), execute, fetch, close(). */
    private List<Object[]> query(String name, Object... args) throws SQLException {
        try (Connection c = db.getConnection()) {
            return run(c, name, args);
        }
    }

    private Object[] queryOne(String name, Object... args) throws SQLException {
        try (Connection c = db.getConnection()) {
            return one(c, name, args);
        }
    }

    /** One transaction on one connection, committed at its end (rolled back on error). */
    @FunctionalInterface
    interface Work<T> {
        T in(Connection c) throws SQLException, NotFound;
    }

    private <T> T transaction(Work<T> work) throws SQLException, NotFound {
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try {
                T out = work.in(c);
                c.commit();
                return out;
            } catch (SQLException | NotFound | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    /** The key counters forgotten: seeded from the tables again at their next use (after data.py's restore deleted the keys they had counted to). */
    void forgetKeys() {
        synchronized (next) {
            next.clear();
        }
    }

    /** Next key of `table` ≡ server (mod servers); a process-wide counter seeded from the table once (statement max_COLUMN). */
    private long newId(Connection c, String table, String column) throws SQLException {
        synchronized (next) {
            if (!next.containsKey(table)) {
                Object[] top = one(c, "max_" + column);
                long t = top == null || top[0] == null ? 0 : ((Number) top[0]).longValue();
                next.put(table, t - t % servers + server);
            }
            long id = next.get(table) + servers;
            next.put(table, id);
            return id;
        }
    }

    private static <T> String list(List<T> rows, Function<T, String> fmt) {
        StringBuilder b = new StringBuilder("<ul>");
        for (T r : rows) {
            b.append("<li>").append(fmt.apply(r)).append("</li>");
        }
        return b.append("</ul>").toString();
    }

    static String now(double ahead) {
        return STAMP.format(Instant.ofEpochMilli(System.currentTimeMillis() + (long) (ahead * 1000)));
    }

    private static String esc(Object v) {
        return Shared.escape(v);
    }

    private static long number(Object v) {
        return v == null ? 0 : ((Number) v).longValue();
    }

    private static double real(Object v) {
        return ((Number) v).doubleValue();
    }

    // -- the 14 interactions ----------------------------------------------------------

    private Page home(Map<String, String> args, Long cart) throws SQLException, BadInput {
        long c = integer(args, "c_id", 0L);
        Object[] row = c != 0 ? queryOne("customer_name", c) : null;
        String hello = row != null ? "Welcome back, " + esc(row[0]) + " " + esc(row[1]) : "Welcome";
        return new Page("Home", "<p>" + hello + "</p>" + list(SUBJECTS, Bookstore::esc), cart);
    }

    private Page newProducts(Map<String, String> args, Long cart) throws SQLException {
        List<Object[]> rows = query("new_products", args.getOrDefault("subject", SUBJECTS.get(0)));
        return new Page("New Products", list(rows, r -> r[0] + " " + esc(r[1]) + " by " + esc(r[2]) + " " + esc(r[3])), cart);
    }

    private Page bestSellers(Map<String, String> args, Long cart) throws SQLException {
        String subject = args.getOrDefault("subject", SUBJECTS.get(0));
        long latest = number(queryOne("max_o_id")[0]);
        List<Object[]> rows = query("best_sellers", latest - 3333, subject);
        return new Page("Best Sellers", list(rows, r -> r[0] + " " + esc(r[1]) + " (" + r[2] + " sold)"), cart);
    }

    private Page productDetail(Map<String, String> args, Long cart) throws SQLException, NotFound, BadInput {
        Object[] r = queryOne("product_detail", integer(args, "i_id", null));
        if (r == null) {
            throw new NotFound("no item " + args.get("i_id"));
        }
        return new Page(
                "Product Detail",
                "<p>" + esc(r[0]) + " by " + esc(r[1]) + " " + esc(r[2]) + ": " + Shared.money(r[5]) + " (list " + Shared.money(r[4]) + "), " + r[6] + " in stock</p>",
                cart);
    }

    private Page executeSearch(Map<String, String> args, Long cart) throws SQLException {
        String kind = args.getOrDefault("search_type", "title");
        String by = kind.equals("author") || kind.equals("subject") ? kind : "title";
        List<Long> ids = new ArrayList<>();
        for (Object[] r : query("search_" + by, "%" + args.getOrDefault("search_string", "") + "%")) {
            ids.add(number(r[0]));
        }
        // Pad to 50 hits with the next items, so every search makes 101 connection requests.
        long base = ids.isEmpty() ? 0 : ids.get(ids.size() - 1);
        for (int k = 0, missing = 50 - ids.size(); k < missing; k++) {
            ids.add(base + k + 1);
        }
        List<Object[]> found = new ArrayList<>();
        for (long i : ids) { // entity beans: each item, then its author, in an access of its own
            Object[] item = queryOne("search_item", i);
            Object[] author = queryOne("search_item_author", item != null ? item[1] : 0L);
            if (item != null && author != null) {
                found.add(new Object[] {i, item[0], author[1], item[2]});
            }
        }
        return new Page("Search Results", list(found, r -> r[0] + " " + esc(r[1]) + " by " + esc(r[2]) + ": " + Shared.money(r[3])), cart);
    }

    private Page shoppingCart(Map<String, String> args, Long cart) throws SQLException, BadInput {
        if (cart == null || queryOne("cart_exists", cart) == null) {
            try (Connection c = db.getConnection()) {
                cart = newId(c, "shopping_cart", "sc_id");
                run(c, "cart_insert", cart, now(0));
            }
        }
        if (args.containsKey("i_id")) {
            long item = integer(args, "i_id", null);
            long qty = Math.max(1, integer(args, "qty", 1L));
            try (Connection c = db.getConnection()) {
                run(c, "cart_line_delete", cart, item);
                run(c, "cart_line_insert", cart, qty, item);
            }
        }
        List<Object[]> lines = query("cart_lines", cart);
        query("cart_touch", now(0), cart);
        return new Page("Shopping Cart", list(lines, r -> r[2] + " × " + esc(r[1]) + " at " + Shared.money(r[3])), cart);
    }

    /** Ten accesses: the customer, their login, address and country, the cart (made here if the session has none), its lines, and four price checks. */
    private Page buyRequest(Map<String, String> args, Long cart) throws SQLException, NotFound, BadInput {
        long c = integer(args, "c_id", null);
        Object[] cust = queryOne("customer_by_uname", "user" + c);
        if (cust == null) {
            throw new NotFound("no customer user" + c);
        }
        query("customer_login", now(0), now(7200), cust[0]);
        Object[] addr = queryOne("address", cust[3]);
        Object[] country = queryOne("country", addr[2]);
        try (Connection conn = db.getConnection()) { // the session's cart, or a new one with a random item
            if (cart == null || one(conn, "cart_exists", cart) == null) {
                cart = newId(conn, "shopping_cart", "sc_id");
                run(conn, "cart_insert", cart, now(0));
                run(conn, "cart_line_insert", cart, 1L, (long) ThreadLocalRandom.current().nextInt(1, 1001));
            }
        }
        List<Object[]> lines = query("cart_items", cart);
        double total = 0;
        for (int k = 0; k < 4; k++) { // a price check for up to 4 lines, always 4 accesses
            Object[] line = k < lines.size() ? lines.get(k) : new Object[] {null, 0L};
            Object[] price = queryOne("item_cost", line[0] == null ? 0L : line[0]);
            total += number(line[1]) * (price != null ? real(price[0]) : 0.0);
        }
        String body = "<p>" + esc(cust[1]) + " " + esc(cust[2]) + ", " + esc(addr[0]) + ", " + esc(addr[1]) + ", " + esc(country[0]) + ": total " + Shared.money(total * (1 - real(cust[4]))) + "</p>";
        return new Page("Buy Request", body, cart);
    }

    /** One transaction: the order, its lines, the card transaction, the stock, and the emptied cart. */
    private Page buyConfirm(Map<String, String> args, Long cart) throws SQLException, NotFound, BadInput {
        long c = integer(args, "c_id", null);
        long sc = cart == null ? 0 : cart;
        String ccType = args.getOrDefault("cc_type", "VISA");
        return transaction(conn -> {
            Object[] cust = one(conn, "order_customer", c);
            if (cust == null) {
                throw new NotFound("no customer " + c);
            }
            List<Object[]> lines = run(conn, "order_cart_lines", sc);
            double sum = 0;
            for (Object[] l : lines) {
                sum += number(l[1]) * real(l[2]);
            }
            double sub = sum * (1 - real(cust[2]));
            long o = newId(conn, "orders", "o_id");
            String ship = SHIP_TYPES.get(ThreadLocalRandom.current().nextInt(SHIP_TYPES.size()));
            run(conn, "order_insert", o, c, now(0), sub, sub * 0.0825, sub * 1.0825 + 3, ship, now(86400 * 3), cust[1], cust[1], "PENDING");
            long n = 0;
            for (Object[] l : lines) {
                long q = number(l[1]);
                long stock = number(l[3]);
                run(conn, "order_line_insert", ++n, o, l[0], q, cust[2], "none");
                run(conn, "item_stock", stock - q >= 10 ? stock - q : stock - q + 21, l[0]);
            }
            run(conn, "cc_xact_insert", o, ccType, "4111111111111111", "Card Holder", now(86400 * 365), String.format(java.util.Locale.ROOT, "AUTH%011d", o), sub * 1.0825 + 3, now(0), 1L);
            run(conn, "cart_empty", sc);
            return new Page("Buy Confirm", "<p>order " + o + " placed: " + lines.size() + " lines, " + Shared.money(sub) + "</p>", cart);
        });
    }

    private Page orderDisplay(Map<String, String> args, Long cart) throws SQLException, BadInput {
        long c = integer(args, "c_id", null);
        Object[] cust = queryOne("customer_login_check", "user" + c, "pw" + c);
        Object[] order = queryOne("last_order", cust != null ? cust[0] : 0L);
        List<Object[]> lines = query("order_lines", order != null ? order[0] : 0L);
        String head = order != null ? "<p>order " + order[0] + ": " + Shared.money(order[2]) + ", " + order[3] + "</p>" : "<p>no orders</p>";
        return new Page("Order Display", head + list(lines, r -> r[2] + " × " + esc(r[1])), cart);
    }

    private Page adminRequest(Map<String, String> args, Long cart) throws SQLException, NotFound, BadInput {
        Object[] r = queryOne("admin_item", integer(args, "i_id", null));
        if (r == null) {
            throw new NotFound("no item " + args.get("i_id"));
        }
        return new Page("Admin Request", "<p>" + esc(r[0]) + ": " + Shared.money(r[1]) + "</p>", cart);
    }

    /** One transaction: the new price and images, and the item's related items recomputed from the customers who bought it recently (TPC-W §2.16). */
    private Page adminConfirm(Map<String, String> args, Long cart) throws SQLException, NotFound, BadInput {
        long i = integer(args, "i_id", null);
        return transaction(conn -> {
            double cost = Math.round(ThreadLocalRandom.current().nextDouble(1, 1000) * 100) / 100.0;
            run(conn, "admin_update", cost, "img/image_" + i + ".gif", "img/thumb_" + i + ".gif", now(0), i);
            List<Object> ids = new ArrayList<>();
            for (Object[] r : run(conn, "related_items", i, i)) {
                ids.add(r[0]);
            }
            while (ids.size() < 5) {
                ids.add(i);
            }
            ids.add(i);
            run(conn, "related_update", ids.toArray());
            return new Page("Admin Confirm", "<p>item " + i + " updated</p>", cart);
        });
    }
}
