package tierlab.bookstore;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.sql.Connection;
import java.util.List;

/**
 * One request's timeline at the tier, as the Python middleware's RequestContext: the
 * current phase and the seconds spent in each, and what the request demanded (its
 * thread's CPU time, the part in taking and giving back connections, its statements
 * and their wall and CPU time). Confined to the worker thread that serves it.
 */
final class RequestContext {
    /** The trace schema's phases (python/tierlab/trace/schema.py PHASES), in its order. */
    static final List<String> PHASES = List.of("wait_thread", "before_db", "wait_db", "with_db_active", "with_db_idle", "other");

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final ThreadLocal<RequestContext> CURRENT = new ThreadLocal<>();

    final long id;
    final long session;
    final String type;
    final double start;
    private int phase;
    private double since;
    final double[] timeIn = new double[PHASES.size()];
    int dbRequests;
    int dbQueries;
    double dbTime;
    double dbCpuTime;
    double poolCpuTime;
    /** The connection held across close(): request-wide caching. */
    Connection cached;

    RequestContext(long id, long session, String type, double start) {
        this.id = id;
        this.session = session;
        this.type = type;
        this.start = start;
        this.since = start;
    }

    /** The phase becomes {@code name} now; the time since the last change goes to the old one. */
    void enter(String name) {
        double now = Windows.now();
        timeIn[phase] += now - since;
        phase = PHASES.indexOf(name);
        since = now;
    }

    /** Ends the timeline (no phase after it); the instant it ended. */
    double finish() {
        double now = Windows.now();
        timeIn[phase] += now - since;
        since = now;
        return now;
    }

    /** The thread's CPU time, seconds. */
    static double cpu() {
        return THREADS.getCurrentThreadCpuTime() / 1e9;
    }

    static RequestContext current() {
        return CURRENT.get();
    }

    static void bind(RequestContext ctx) {
        if (ctx == null) {
            CURRENT.remove();
        } else {
            CURRENT.set(ctx);
        }
    }
}
