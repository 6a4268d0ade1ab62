package tierlab.bookstore;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The servlet filter that profiles every request as the Python middleware's Tier does
 * (python/tierlab/live/server/middleware.py): a record per request with the phases of
 * the trace schema (wait_thread from the worker executor's hand-over, the database
 * phases from the TimedDataSource), its thread's CPU time while it held the worker,
 * and the tier's per-window observation (requests in progress, arrivals, completions,
 * residence) beside each pool's. X-Tierlab-Type, -Request and -Session name the
 * request; without them the path is the type.
 */
final class Tier implements Filter {
    static final List<String> STATUSES = List.of("ok", "rejected", "timeout", "error");
    private static final Logger LOG = Logger.getLogger("tierlab.live");

    /** Bytes of a page held before any is sent: every page fits, so a failure can still become a 500. */
    static final int RESPONSE_BUFFER = 64 * 1024;

    final String name = "app";
    final Workers threads;
    final TimedDataSource db;
    final Sessions sessions;
    final Exposition exposition = new Exposition(name);
    private final Map<String, Long> counts = new LinkedHashMap<>();
    private List<Map<String, Object>> records = new ArrayList<>();
    private final Set<RequestContext> open = new LinkedHashSet<>();
    private Windows.Intervals concurrency;
    private Windows.Counts arrivals;
    private Windows.Counts completions;
    private Windows.Counts residence;

    Tier(Workers threads, TimedDataSource db, Sessions sessions) {
        this.threads = threads;
        this.db = db;
        this.sessions = sessions;
        for (String s : STATUSES) {
            counts.put(s, 0L);
        }
        observe(Windows.now(), 0.1);
    }

    /** Start the per-window observation afresh (a run's series), the pools' too. */
    void observe(double origin, double window) {
        synchronized (this) {
            concurrency = new Windows.Intervals(origin, window);
            arrivals = new Windows.Counts(origin, window);
            completions = new Windows.Counts(origin, window);
            residence = new Windows.Counts(origin, window);
        }
        threads.stats.observe(origin, window);
        db.stats.observe(origin, window);
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
        HttpServletRequest req = (HttpServletRequest) request;
        HttpServletResponse res = (HttpServletResponse) response;
        res.setBufferSize(RESPONSE_BUFFER);
        Workers.Dispatch dispatch = Workers.take();
        double now = Windows.now();
        String type = req.getHeader("X-Tierlab-Type");
        RequestContext ctx = new RequestContext(
                header(req, "X-Tierlab-Request"), header(req, "X-Tierlab-Session"), type != null && !type.isEmpty() ? type : req.getRequestURI(), dispatch != null ? dispatch.arrived() : now);
        synchronized (this) {
            open.add(ctx);
            arrivals.add(ctx.start, 1);
        }
        RequestContext.bind(ctx);
        try {
            ctx.enter("before_db"); // the wait for a worker ends: it runs this
            double waited = now - ctx.start;
            // Tomcat cannot cut the wait short: the request is refused when it gets its
            // worker (which Workers counts as held for the task, refused or not).
            if (waited > threads.stats.timeout()) {
                threads.stats.refused(now, true);
                finish(ctx, "rejected", Double.NaN, res, 503, String.format(Locale.ROOT, "rejected: no threads token: waited %.3f s", waited));
                return;
            }
            threads.stats.counted(now);
            double cpu = RequestContext.cpu();
            try {
                chain.doFilter(req, res);
                int status = res.getStatus();
                finish(ctx, status >= 200 && status < 400 ? "ok" : "error", cpu, res, 0, null);
            } catch (PoolRejected e) {
                finish(ctx, "rejected", cpu, res, 503, "rejected: " + e.getMessage());
            } catch (Exception e) { // an application failure is an explicit, counted 500
                Throwable cause = e instanceof ServletException && e.getCause() != null ? e.getCause() : e;
                if (cause instanceof PoolRejected rejected) {
                    finish(ctx, "rejected", cpu, res, 503, "rejected: " + rejected.getMessage());
                } else {
                    LOG.log(Level.WARNING, "request {0} ({1}) failed: {2}", new Object[] {ctx.id, ctx.type, cause});
                    finish(ctx, "error", cpu, res, 500, "error: " + cause.getClass().getSimpleName() + ": " + cause.getMessage());
                }
            } finally {
                try {
                    db.endRequest(ctx);
                } catch (java.sql.SQLException e) {
                    LOG.log(Level.WARNING, "giving back request {0}'s connection failed: {1}", new Object[] {ctx.id, e});
                }
            }
        } finally {
            RequestContext.bind(null);
        }
    }

    private static long header(HttpServletRequest req, String name) {
        try {
            return Long.parseLong(req.getHeader(name));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /**
     * The request's record (its CPU time counted from {@code cpuAtGrant}, NaN: it never
     * had a worker's); a non-null body replaces the response with a plain-text one of
     * that status.
     */
    private void finish(RequestContext ctx, String outcome, double cpuAtGrant, HttpServletResponse res, int status, String body) throws IOException {
        double cpuTime = Double.isNaN(cpuAtGrant) ? 0.0 : RequestContext.cpu() - cpuAtGrant;
        double end = ctx.finish();
        Map<String, Object> rec = new LinkedHashMap<>();
        rec.put("id", ctx.id);
        rec.put("session", ctx.session);
        rec.put("type", ctx.type);
        rec.put("status", outcome);
        rec.put("start", ctx.start);
        rec.put("end", end);
        rec.put("time", end - ctx.start);
        rec.put("db_requests", ctx.dbRequests);
        rec.put("cpu_time", cpuTime);
        rec.put("db_queries", ctx.dbQueries);
        rec.put("db_time", ctx.dbTime);
        rec.put("db_cpu_time", ctx.dbCpuTime);
        rec.put("pool_cpu_time", ctx.poolCpuTime);
        for (int k = 0; k < RequestContext.PHASES.size(); k++) {
            rec.put(RequestContext.PHASES.get(k), ctx.timeIn[k]);
        }
        synchronized (this) {
            counts.merge(outcome, 1L, Long::sum);
            records.add(rec);
            open.remove(ctx);
            concurrency.add(ctx.start, end);
            completions.add(end, 1);
            residence.add(end, end - ctx.start);
        }
        exposition.observe(ctx.type, outcome, end - ctx.start);
        if (body != null) {
            if (!res.isCommitted()) {
                res.reset();
            }
            Bookstore.plain(res, status, body);
        }
    }

    /** The records since the last drain. */
    synchronized List<Map<String, Object>> drain() {
        List<Map<String, Object>> out = records;
        records = new ArrayList<>();
        return out;
    }

    /** The first n windows of the observation: the server's and each pool's (Tier.windows). */
    Map<String, Object> windows(int n) {
        Map<String, Object> server = new LinkedHashMap<>();
        synchronized (this) {
            List<Double> starts = new ArrayList<>();
            for (RequestContext c : open) {
                starts.add(c.start);
            }
            server.put("concurrency", concurrency.windows(starts, Windows.now(), n));
            server.put("arrivals", arrivals.windows(n));
            server.put("completions", completions.windows(n));
            server.put("residence", residence.windows(n));
        }
        return Map.of("server", server, "pools", Map.of("threads", threads.stats.windows(n), "connections", db.stats.windows(n)));
    }

    /** The server now: requests by status since it started, and each pool (Tier.metrics), and the sessions. */
    Map<String, Object> metrics() {
        Map<String, Object> pools = new LinkedHashMap<>();
        pools.put("threads", threads.stats.sample());
        Map<String, Object> connections = db.stats.sample();
        connections.put("caching", db.caching());
        connections.put("discarded", db.discarded.get());
        connections.put("open", db.pool.getHikariPoolMXBean().getTotalConnections());
        pools.put("connections", connections);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("tier", name);
        synchronized (this) {
            out.put("requests", new LinkedHashMap<>(counts));
            out.put("in_progress", open.size());
        }
        out.put("pools", pools);
        out.put("sessions", sessions.counts());
        return out;
    }
}
