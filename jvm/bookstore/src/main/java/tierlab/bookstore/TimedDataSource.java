package tierlab.bookstore;

import com.zaxxer.hikari.HikariDataSource;
import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The DataSource the bookstore sees: HikariCP's pool of N connections, wrapped so that
 * each request's time splits into the Python middleware's phases (wait_db while
 * getConnection() waits, with_db_active while the connection is held, with_db_idle while
 * request-wide caching keeps it between accesses, before_db otherwise) and its demands
 * are counted: connection requests, statements with their wall and CPU time, and the
 * CPU time getConnection() and close() themselves take (pool_cpu_time).
 *
 * <p>Connection caching as in the paper (§3) and ConnectionPool: transaction-wide gives
 * the connection back at close(); request-wide keeps it, idle, until the request ends
 * (one connection request per request). HikariCP's own wait timeout
 * (connectionTimeout) is the pool's timeout; a wait that runs out is a rejection (503).
 */
final class TimedDataSource implements DataSource {
    final HikariDataSource pool;
    final PoolStats stats;
    private volatile String caching;
    /** Connections that failed with a connection error (SQLState class 08): HikariCP evicts them. */
    final AtomicLong discarded = new AtomicLong();

    TimedDataSource(HikariDataSource pool, String caching) {
        this.pool = pool;
        this.caching = caching;
        this.stats = new PoolStats(pool::getMaximumPoolSize, pool.getConnectionTimeout() / 1000.0);
    }

    String caching() {
        return caching;
    }

    void caching(String mode) {
        caching = mode;
    }

    @Override
    public Connection getConnection() throws SQLException {
        RequestContext ctx = RequestContext.current();
        if (ctx == null) {
            return pool.getConnection(); // outside a request: the server's own work at start
        }
        if (ctx.cached != null) { // request-wide caching: the request's connection again
            ctx.enter("with_db_active");
            return wrap(ctx.cached, ctx, false);
        }
        ctx.enter("wait_db");
        ctx.dbRequests++;
        double cpu = RequestContext.cpu();
        boolean waited = stats.full();
        double asked = Windows.now();
        double runDelay = Double.NaN;
        if (waited) {
            stats.waitBegins(asked);
            runDelay = RunQueue.delay();
        }
        Connection real;
        try {
            real = pool.getConnection();
        } catch (SQLException e) {
            double now = Windows.now();
            if (waited) {
                stats.waitEnds(now);
            }
            ctx.poolCpuTime += RequestContext.cpu() - cpu;
            if (e instanceof SQLTransientConnectionException) { // HikariCP: connectionTimeout elapsed
                stats.refused(now, true);
                throw new PoolRejected("connections", String.format(Locale.ROOT, "waited %.3f s", now - asked));
            }
            stats.refused(now, false);
            throw e;
        }
        double now = Windows.now();
        if (waited) {
            stats.waitEnds(now);
            stats.handedOver(asked, now, RunQueue.since(runDelay));
        }
        stats.granted(now);
        ctx.poolCpuTime += RequestContext.cpu() - cpu;
        ctx.enter("with_db_active");
        return wrap(real, ctx, true);
    }

    /** The end of a request: give back the connection request-wide caching kept. */
    void endRequest(RequestContext ctx) throws SQLException {
        if (ctx.cached != null) {
            Connection c = ctx.cached;
            ctx.cached = null;
            giveBack(ctx, c);
        }
    }

    private void giveBack(RequestContext ctx, Connection real) throws SQLException {
        // Counted free first: close() may hand the connection straight to a waiter, whose
        // grant would otherwise be counted while this one still is (busy N + 1).
        stats.released(Windows.now());
        double cpu = RequestContext.cpu();
        try {
            real.close(); // HikariCP rolls back what is uncommitted and resets autocommit
        } finally {
            ctx.poolCpuTime += RequestContext.cpu() - cpu;
        }
    }

    private Connection wrap(Connection real, RequestContext ctx, boolean owned) {
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, new Held(real, ctx, owned));
    }

    /** A connection lent to one access: close() ends the access; its statements are timed. */
    private final class Held implements InvocationHandler {
        private final Connection real;
        private final RequestContext ctx;
        private final boolean owned;
        private boolean closed;
        private boolean broken;

        Held(Connection real, RequestContext ctx, boolean owned) {
            this.real = real;
            this.ctx = ctx;
            this.owned = owned;
        }

        @Override
        public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
            switch (m.getName()) {
                case "close":
                    close();
                    return null;
                case "isClosed":
                    return closed || real.isClosed();
                case "unwrap":
                case "isWrapperFor":
                    throw new SQLFeatureNotSupportedException("the bookstore's connections are not unwrapped");
                default:
                    break;
            }
            if (closed) {
                throw new SQLException("connection closed");
            }
            Object out = call(m, args);
            if (out instanceof Statement s) {
                Class<?> kind = out instanceof CallableStatement ? CallableStatement.class : out instanceof PreparedStatement ? PreparedStatement.class : Statement.class;
                return Proxy.newProxyInstance(Statement.class.getClassLoader(), new Class<?>[] {kind}, new Timed(s, ctx, this));
            }
            return out;
        }

        Object call(Method m, Object[] args) throws Throwable {
            return invokeOn(real, m, args, this);
        }

        void failed(SQLException e) {
            String state = e.getSQLState();
            if (!broken && state != null && state.startsWith("08")) {
                broken = true;
                discarded.incrementAndGet();
            }
        }

        private void close() throws SQLException {
            if (closed) {
                return;
            }
            closed = true;
            if (!owned) { // the request's cached connection: idle until its next access
                ctx.enter("with_db_idle");
                return;
            }
            if ("request".equals(caching) && !broken) {
                if (!real.getAutoCommit()) {
                    real.rollback(); // nothing uncommitted leaks into the next access
                    real.setAutoCommit(true);
                }
                ctx.cached = real;
                ctx.enter("with_db_idle");
                return;
            }
            giveBack(ctx, real);
            ctx.enter("before_db");
        }
    }

    /** A statement, or a result set, whose executions and fetches count into the request. */
    private final class Timed implements InvocationHandler {
        private final Object real;
        private final RequestContext ctx;
        private final Held conn;

        Timed(Object real, RequestContext ctx, Held conn) {
            this.real = real;
            this.ctx = ctx;
            this.conn = conn;
        }

        @Override
        public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
            String name = m.getName();
            boolean statement = name.startsWith("execute");
            if (!statement && !name.equals("next")) {
                Object out = invokeOn(real, m, args, conn);
                return out instanceof ResultSet rs && name.equals("getResultSet") ? results(rs) : out;
            }
            double wall = Windows.now();
            double cpu = RequestContext.cpu();
            try {
                Object out = invokeOn(real, m, args, conn);
                return out instanceof ResultSet rs ? results(rs) : out;
            } finally {
                ctx.dbTime += Windows.now() - wall;
                ctx.dbCpuTime += RequestContext.cpu() - cpu;
                if (statement) {
                    ctx.dbQueries++;
                }
            }
        }

        private Object results(ResultSet rs) {
            return Proxy.newProxyInstance(ResultSet.class.getClassLoader(), new Class<?>[] {ResultSet.class}, new Timed(rs, ctx, conn));
        }
    }

    private static Object invokeOn(Object target, Method m, Object[] args, Held conn) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof SQLException s) {
                conn.failed(s);
            }
            throw e.getCause();
        }
    }

    // The rest of DataSource: HikariCP's.

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
        throw new SQLFeatureNotSupportedException("the pool's connections have one user");
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
        return pool.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
        pool.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
        pool.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
        return pool.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        return pool.getParentLogger();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
        throw new SQLFeatureNotSupportedException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
        return false;
    }
}
