package tierlab.bookstore;

import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariConfigMXBean;
import com.zaxxer.hikari.HikariDataSource;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Logger;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.apache.coyote.http11.Http11NioProtocol;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;

/**
 * Serve the TPC-W bookstore on embedded Tomcat (M worker threads) and HikariCP (N
 * connections), with the loopback admin endpoint; the options are the Python server's
 * (python -m tierlab.live.server.serve):
 *
 * <pre>
 *   java -jar bookstore.jar --db sqlite:///PATH --port 8080 --admin-port 8081 \
 *       --token-file TOKEN --threads 20 --connections 10 [--caching transaction]
 * </pre>
 *
 * The database is one the Python data generator populated (`tierlab live up` does):
 * this server reads and writes the bookstore's tables, it never creates them.
 */
public final class Main {
    private static final Logger LOG = Logger.getLogger("tierlab.live");
    // Limits of a server that faces any client, the Python server's (serve.py).
    static final int MAX_HEAD = 16 * 1024;
    static final int MAX_BODY = 64 * 1024;
    static final int BACKLOG = 4096;

    private Main() {}

    static final List<String> OPTIONS = List.of(
            "--db", "--host", "--port", "--admin-port", "--token-file", "--threads", "--connections", "--caching", "--timeout",
            "--request-timeout", "--channel-timeout", "--connection-limit", "--server", "--servers", "--sessions");

    static Map<String, String> parse(String[] argv) {
        Map<String, String> a = new HashMap<>(Map.of(
                "--host", "127.0.0.1", "--port", "8080", "--admin-port", "8081", "--threads", "20", "--connections", "10", "--caching", "transaction",
                "--timeout", "10", "--request-timeout", "10", "--channel-timeout", "75", "--connection-limit", "900"));
        a.put("--server", "0");
        a.put("--servers", "1");
        for (int i = 0; i < argv.length; i++) {
            if (!OPTIONS.contains(argv[i]) || i + 1 == argv.length) {
                fail("unknown option or missing value: " + argv[i] + "; options: " + String.join(" ", OPTIONS));
            }
            a.put(argv[i], argv[++i]);
        }
        for (String required : List.of("--db", "--token-file")) {
            if (!a.containsKey(required)) {
                fail(required + " is required");
            }
        }
        if (a.containsKey("--sessions")) {
            fail("--sessions (session state in Redis) is not supported by the JVM bookstore: its sessions live in this process only");
        }
        if (!List.of("request", "transaction").contains(a.get("--caching"))) {
            fail("--caching must be request or transaction, got " + a.get("--caching"));
        }
        return a;
    }

    static void fail(String message) {
        System.err.println("bookstore: " + message);
        System.exit(2);
    }

    /** The pool of N connections to `sqlite:///PATH` or `postgresql://USER@HOST:PORT/DB`, the Python server's URLs. */
    static HikariDataSource pool(String url, int size, double timeout) {
        HikariConfig c = new HikariConfig();
        c.setPoolName("connections");
        c.setMaximumPoolSize(size);
        c.setMinimumIdle(size);
        c.setConnectionTimeout(Math.max(250, Math.round(timeout * 1000)));
        c.setAutoCommit(true); // an access is its statements; a transaction sets autocommit off
        if (url.startsWith("sqlite:///")) {
            c.setJdbcUrl("jdbc:sqlite:" + url.substring("sqlite:///".length()));
            // The Python server's settings (data.py), and IMMEDIATE transactions: a
            // transaction that reads before it writes would otherwise fail at once when
            // another wrote meanwhile (Python's sqlite3 begins a transaction at its first
            // write, so its bookstore never meets this).
            c.addDataSourceProperty("journal_mode", "WAL");
            c.addDataSourceProperty("synchronous", "NORMAL");
            c.addDataSourceProperty("busy_timeout", "30000");
            c.addDataSourceProperty("transaction_mode", "IMMEDIATE");
        } else if (url.startsWith("postgresql://") || url.startsWith("postgres://")) {
            URI u = URI.create(url);
            c.setJdbcUrl("jdbc:postgresql://" + u.getHost() + ":" + (u.getPort() < 0 ? 5432 : u.getPort()) + u.getPath());
            String[] who = (u.getUserInfo() == null ? "postgres" : u.getUserInfo()).split(":", 2);
            c.setUsername(who[0]);
            if (who.length > 1) {
                c.setPassword(who[1]);
            }
            // Parameters go as untyped text, as psycopg sends them: the timestamps are strings.
            c.addDataSourceProperty("stringtype", "unspecified");
        } else {
            fail("--db " + url + ": use sqlite:///PATH or postgresql://USER@HOST:PORT/DB");
        }
        return new HikariDataSource(c);
    }

    /** N at run time: HikariCP's maximumPoolSize (and minimumIdle, a fixed-size pool); a smaller N retires the connections beyond it as they come back. */
    static void resizeConnections(TimedDataSource db, int size) {
        HikariConfigMXBean config = db.pool.getHikariConfigMXBean();
        if (size >= config.getMaximumPoolSize()) {
            config.setMaximumPoolSize(size);
            config.setMinimumIdle(size);
        } else {
            config.setMinimumIdle(size);
            config.setMaximumPoolSize(size);
            db.pool.getHikariPoolMXBean().softEvictConnections(); // idle ones closed now, held ones when given back; the pool refills to N
        }
        db.stats.resized(Windows.now());
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = parse(argv);
        double timeout = Double.parseDouble(a.get("--timeout"));
        HikariDataSource hikari = pool(a.get("--db"), Integer.parseInt(a.get("--connections")), timeout);
        try (Connection c = hikari.getConnection()) {
            c.createStatement().executeQuery("SELECT i_id FROM item LIMIT 1").close();
        } catch (SQLException e) {
            fail("the database " + a.get("--db") + " has no bookstore (" + e.getMessage() + "); populate it with the Python data generator (`tierlab live up` does)");
        }
        TimedDataSource db = new TimedDataSource(hikari, a.get("--caching"));
        Workers workers = new Workers(Integer.parseInt(a.get("--threads")), timeout);
        Sessions sessions = new Sessions();
        Tier tier = new Tier(workers, db, sessions);

        Path base = Files.createTempDirectory("tierlab-tomcat");
        base.toFile().deleteOnExit();
        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(base.toString());
        Connector connector = new Connector(new Http11NioProtocol(new Endpoint(workers)));
        connector.setPort(Integer.parseInt(a.get("--port")));
        connector.setProperty("address", a.get("--host"));
        connector.setMaxPostSize(MAX_BODY);
        connector.setURIEncoding(StandardCharsets.UTF_8.name());
        AbstractHttp11Protocol<?> http = (AbstractHttp11Protocol<?>) connector.getProtocolHandler();
        http.setMaxHttpHeaderSize(MAX_HEAD);
        http.setMaxConnections(Integer.parseInt(a.get("--connection-limit")));
        http.setAcceptCount(BACKLOG);
        http.setConnectionTimeout((int) (Double.parseDouble(a.get("--request-timeout")) * 1000));
        http.setKeepAliveTimeout(Integer.parseInt(a.get("--channel-timeout")) * 1000);
        http.setMaxKeepAliveRequests(-1); // a browser keeps its connection, as with the Python server
        tomcat.getService().addConnector(connector);
        tomcat.setConnector(connector);

        Context ctx = tomcat.addContext("", null);
        Bookstore bookstore = new Bookstore(db, sessions, Integer.parseInt(a.get("--server")), Integer.parseInt(a.get("--servers")));
        Tomcat.addServlet(ctx, "bookstore", bookstore);
        // A mapping per page, so that each page is a route of its own (OpenTelemetry's
        // http.route names the request type); "/" takes every other path (404).
        for (String page : bookstore.pages()) {
            ctx.addServletMapping(page, "bookstore");
        }
        ctx.addServletMapping("/", "bookstore");
        FilterDef filter = new FilterDef();
        filter.setFilterName("tier");
        filter.setFilter(tier);
        ctx.addFilterDef(filter);
        FilterMap map = new FilterMap();
        map.setFilterName("tier");
        map.addURLPattern("/*");
        ctx.addFilterMap(map);
        tomcat.start();

        // Listening on the application port first: an answering admin endpoint means "up".
        HttpServer admin = Admin.start(tier, Integer.parseInt(a.get("--admin-port")), Files.readString(Path.of(a.get("--token-file"))).strip(), bookstore::forgetKeys);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            admin.stop(0);
            try {
                tomcat.stop();
                tomcat.destroy();
            } catch (Exception e) {
                LOG.warning("stopping Tomcat: " + e);
            }
            workers.shutdownNow();
            hikari.close();
        }, "shutdown"));
        LOG.info(String.format("bookstore on http://%s:%s (admin 127.0.0.1:%s), %s, %s threads, %s connections", a.get("--host"), a.get("--port"), a.get("--admin-port"), a.get("--db"), a.get("--threads"), a.get("--connections")));
        tomcat.getServer().await();
    }
}
