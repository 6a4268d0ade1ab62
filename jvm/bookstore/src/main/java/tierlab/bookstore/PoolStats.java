package tierlab.bookstore;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntSupplier;

/**
 * One pool's account — Tomcat's worker threads or HikariCP's connections — in the
 * words of the Python server's TokenPool (python/tierlab/live/server/pool.py), which the
 * testbed reads: tokens busy and requests queued now, acquired and rejected since the
 * start, and per window busy, busy_max, queued and handing_off (integrals) and the
 * acquired, waited, timed_out and rejected counts. The pool itself is the library's;
 * this only counts around it.
 */
final class PoolStats {
    static final List<String> EVENTS = List.of("acquired", "waited", "timed_out", "rejected");

    private final IntSupplier size;
    private volatile double timeout;
    private int busy;
    private int queued;
    private long acquired;
    private long rejected;
    private Windows.Level busyLevel;
    private Windows.Level queuedLevel;
    private Windows.Level handingOff;
    private Map<String, Windows.Counts> events;

    PoolStats(IntSupplier size, double timeout) {
        this.size = size;
        this.timeout = timeout;
        observe(Windows.now(), 0.1);
    }

    double timeout() {
        return timeout;
    }

    void timeout(double seconds) {
        timeout = seconds;
    }

    int size() {
        return size.getAsInt();
    }

    synchronized void observe(double origin, double window) {
        busyLevel = new Windows.Level(origin, window, busy);
        queuedLevel = new Windows.Level(origin, window, queued);
        handingOff = new Windows.Level(origin, window, promised());
        events = new LinkedHashMap<>();
        for (String e : EVENTS) {
            events.put(e, new Windows.Counts(origin, window));
        }
    }

    /** Tokens free while requests wait: each is being handed to a waiter (as pool.py counts it). */
    private int promised() {
        return Math.max(0, Math.min(size() - busy, queued));
    }

    private void levels(double now) {
        busyLevel.set(now, busy);
        queuedLevel.set(now, queued);
        handingOff.set(now, promised());
    }

    /** Whether an acquisition now would wait: every token held, or others already waiting. */
    synchronized boolean full() {
        return busy >= size() || queued > 0;
    }

    synchronized void waitBegins(double now) {
        queued++;
        events.get("waited").add(now, 1);
        levels(now);
    }

    synchronized void waitEnds(double now) {
        queued--;
        levels(now);
    }

    synchronized void granted(double now) {
        taken(now);
        counted(now);
    }

    /** A token held from now, not yet counted as granted: a worker's task, before it is known to carry a request. */
    synchronized void taken(double now) {
        busy++;
        levels(now);
    }

    /** The grant of a token already taken: the worker's task carries a request (a task may only close a socket). */
    synchronized void counted(double now) {
        acquired++;
        events.get("acquired").add(now, 1);
    }

    synchronized void released(double now) {
        busy--;
        levels(now);
    }

    synchronized void refused(double now, boolean timedOut) {
        rejected++;
        events.get("rejected").add(now, 1);
        if (timedOut) {
            events.get("timed_out").add(now, 1);
        }
        levels(now);
    }

    /** After a resize: the free tokens, hence handing_off, changed. */
    synchronized void resized(double now) {
        levels(now);
    }

    /** The pool now, and its counters since it was made (TokenPool.sample). */
    synchronized Map<String, Object> sample() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("size", size());
        out.put("busy", busy);
        out.put("queued", queued);
        out.put("rejected", rejected);
        out.put("acquired", acquired);
        out.put("timeout", timeout);
        out.put("max_queue", null);
        return out;
    }

    /** The first n windows of the observation (TokenPool.windows). */
    synchronized Map<String, Object> windows(int n) {
        double now = Windows.now();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("busy", busyLevel.areas(now, n));
        out.put("busy_max", busyLevel.peaks(n));
        out.put("queued", queuedLevel.areas(now, n));
        out.put("handing_off", handingOff.areas(now, n));
        for (String e : EVENTS) {
            out.put(e, events.get(e).windows(n));
        }
        return out;
    }
}
