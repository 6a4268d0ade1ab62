package tierlab.bookstore;

import com.fasterxml.jackson.jr.ob.JSON;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;

/**
 * The loopback admin endpoint, the Python server's (serve.py) in paths, token rule and
 * JSON: every call needs "Authorization: Bearer TOKEN";
 *   GET  /metrics          the server now: requests by status, each pool, the sessions
 *                          (the Prometheus text format when asked: Accept text/plain or OpenMetrics)
 *   POST /config           {"threads": {...}, "connections": {...}}: size (Tomcat's
 *                          executor; HikariCP's maximumPoolSize), timeout (seconds a request
 *                          waits, then 503), caching (request|transaction), and max_queue
 *                          and priorities, which only take their neutral values here
 *   POST /observe          {"origin": monotonic seconds, "window": seconds}
 *   POST /sessions/forget  drop every session's state
 *   POST /keys/forget      the key counters seeded from the tables again at their next use
 *                          (after data.py's restore put the data back as populated)
 *   POST /drain            {"windows": n} → {"records": [...], "windows": {...}}
 */
final class Admin {
    static final int MAX_THREADS = 128; // the largest M (serve.py)
    static final int MAX_CONNECTIONS = 256; // below the project's PostgreSQL max_connections (300)
    /** HikariCP's floor for connectionTimeout. */
    static final double MIN_CONNECTION_TIMEOUT = 0.25;
    static final Map<String, Set<String>> POOL_SETTINGS = Map.of(
            "threads", Set.of("size", "timeout", "max_queue", "priorities"), "connections", Set.of("size", "timeout", "max_queue", "priorities", "caching"));

    /** JSON as Python's json.dumps writes it: a null is written (max_queue), not left out. */
    private static final JSON OUT = JSON.std.with(JSON.Feature.WRITE_NULL_PROPERTIES);

    private Admin() {}

    /** A bad setting: 400 with this message, and nothing applied. */
    static final class Invalid extends Exception {
        private static final long serialVersionUID = 1L;

        Invalid(String message) {
            super(message);
        }
    }

    /** `forgetKeys`: the bookstore's key counters forgotten (POST /keys/forget). */
    static HttpServer start(Tier tier, int port, String token, Runnable forgetKeys) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 64);
        byte[] expected = token.getBytes(StandardCharsets.UTF_8);
        server.createContext("/", ex -> {
            try (ex) {
                String given = ex.getRequestHeaders().getFirst("Authorization");
                given = given == null ? "" : given.startsWith("Bearer ") ? given.substring(7) : given;
                if (!MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8), expected)) {
                    reply(ex, 401, Shared.error("missing or wrong token (header Authorization: Bearer TOKEN)"));
                    return;
                }
                handle(tier, forgetKeys, ex);
            } catch (RuntimeException e) {
                reply(ex, 500, Shared.error(e.toString()));
            }
        });
        server.setExecutor(Executors.newFixedThreadPool(4, r -> {
            Thread t = new Thread(r, "tierlab-admin");
            t.setDaemon(true);
            return t;
        }));
        server.start();
        return server;
    }

    private static void handle(Tier tier, Runnable forgetKeys, HttpExchange ex) throws IOException {
        String path = ex.getRequestURI().getPath();
        if (ex.getRequestMethod().equals("GET")) {
            if (path.equals("/metrics") && Exposition.wanted(ex.getRequestHeaders().getFirst("Accept"))) { // a Prometheus scraper: its text format
                send(ex, 200, tier.exposition.render(tier.metrics()).getBytes(java.nio.charset.StandardCharsets.UTF_8), "text/plain; version=0.0.4; charset=utf-8");
            } else if (path.equals("/metrics")) {
                reply(ex, 200, tier.metrics());
            } else {
                reply(ex, 404, Shared.error("no " + path + "; GET /metrics, POST /config, /observe, /drain"));
            }
            return;
        }
        try {
            byte[] raw = ex.getRequestBody().readAllBytes();
            Map<String, Object> body = raw.length == 0 ? Map.of() : JSON.std.mapFrom(raw);
            switch (path) {
                case "/drain" -> {
                    int n = ((Number) body.getOrDefault("windows", 0)).intValue();
                    reply(ex, 200, Map.of("records", tier.drain(), "windows", tier.windows(n)));
                }
                case "/observe" -> {
                    tier.observe(number(body, "origin"), number(body, "window"));
                    reply(ex, 200, Map.of());
                }
                case "/sessions/forget" -> {
                    tier.sessions.forget();
                    reply(ex, 200, Map.of());
                }
                case "/keys/forget" -> {
                    forgetKeys.run();
                    reply(ex, 200, Map.of());
                }
                case "/config" -> {
                    for (Runnable apply : check(tier, body)) {
                        apply.run();
                    }
                    reply(ex, 200, tier.metrics());
                }
                default -> reply(ex, 404, Shared.error("no " + path));
            }
        } catch (Invalid | ClassCastException | IOException e) {
            reply(ex, 400, Shared.error(e.getMessage()));
        }
    }

    private static double number(Map<String, Object> body, String key) throws Invalid {
        if (!(body.get(key) instanceof Number n)) {
            throw new Invalid("'" + key + "'");
        }
        return n.doubleValue();
    }

    /** Every setting checked first, as functions that apply them: a bad request changes nothing. */
    static List<Runnable> check(Tier tier, Map<String, Object> body) throws Invalid {
        List<Runnable> changes = new ArrayList<>();
        for (Map.Entry<String, Object> pool : body.entrySet()) {
            String name = pool.getKey();
            if (!POOL_SETTINGS.containsKey(name)) {
                throw new Invalid("unknown pool '" + name + "'; configure threads or connections");
            }
            if (!(pool.getValue() instanceof Map<?, ?> settings)) {
                throw new Invalid(name + " takes an object of settings, e.g. {\"size\": 10}");
            }
            for (Map.Entry<?, ?> s : settings.entrySet()) {
                String key = String.valueOf(s.getKey());
                if (!POOL_SETTINGS.get(name).contains(key)) {
                    throw new Invalid(name + "." + key + ": unknown setting; known: " + String.join(", ", POOL_SETTINGS.get(name)));
                }
                changes.add(setting(tier, name, key, s.getValue()));
            }
        }
        return changes;
    }

    private static boolean whole(Object v) {
        return v instanceof Integer || v instanceof Long;
    }

    private static Runnable setting(Tier tier, String pool, String key, Object value) throws Invalid {
        String where = pool + "." + key;
        boolean threads = pool.equals("threads");
        switch (key) {
            case "size" -> {
                int top = threads ? MAX_THREADS : MAX_CONNECTIONS;
                if (!whole(value) || ((Number) value).longValue() < 1 || ((Number) value).longValue() > top) {
                    throw new Invalid(where + " must be a whole number 1…" + top + ", got " + value);
                }
                int size = ((Number) value).intValue();
                return threads ? () -> tier.threads.resize(size) : () -> Main.resizeConnections(tier.db, size);
            }
            case "timeout" -> {
                if (!(value instanceof Number n) || !(n.doubleValue() > 0) || Double.isInfinite(n.doubleValue())) {
                    throw new Invalid(where + " must be a positive number of seconds, got " + value);
                }
                double seconds = n.doubleValue();
                if (threads) {
                    return () -> tier.threads.stats.timeout(seconds);
                }
                if (seconds < MIN_CONNECTION_TIMEOUT) {
                    throw new Invalid(where + " must be at least " + MIN_CONNECTION_TIMEOUT + " s (HikariCP's connectionTimeout floor), got " + value);
                }
                return () -> {
                    tier.db.pool.getHikariConfigMXBean().setConnectionTimeout(Math.round(seconds * 1000));
                    tier.db.stats.timeout(seconds);
                };
            }
            case "max_queue" -> {
                if (value != null) {
                    throw new Invalid(where + ": the JVM server's queues are unbounded (Tomcat's executor, HikariCP's waiters); only null is accepted, got " + value);
                }
                return () -> {};
            }
            case "priorities" -> {
                if (!(value instanceof Map<?, ?> m) || !m.values().stream().allMatch(Admin::whole)) {
                    throw new Invalid(where + " must map request types to whole numbers, e.g. {\"BUYC\": 0, \"SRES\": 1}");
                }
                if (!m.isEmpty()) {
                    throw new Invalid(where + ": the JVM server serves its waiters in arrival order (Tomcat queues sockets before their request is read; HikariCP has no priorities); only {} is accepted");
                }
                return () -> {};
            }
            default -> {
                if (!"request".equals(value) && !"transaction".equals(value)) {
                    throw new Invalid(where + " must be request or transaction, got " + value);
                }
                return () -> tier.db.caching((String) value);
            }
        }
    }

    private static void reply(HttpExchange ex, int code, Object payload) throws IOException {
        send(ex, code, OUT.asBytes(payload), "application/json");
    }

    private static void send(HttpExchange ex, int code, byte[] body, String contentType) throws IOException {
        ex.getResponseHeaders().set("Content-Type", contentType);
        ex.sendResponseHeaders(code, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }
}
