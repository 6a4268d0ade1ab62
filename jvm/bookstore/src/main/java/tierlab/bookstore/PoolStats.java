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
 *
 * <p>handing_off is not pool.py's level (tokens free while requests wait) but each
 * granted wait's hand-off as the waiter lived it: from the later of its wait's start and
 * the pool's last release, to its grant, less the time the taking thread spent runnable
 * on a CPU's run queue (RunQueue). In a model a token passes at once and the request it
 * goes to then queues for the CPU; here the thread that takes it must first get a core,
 * and under a one-core budget that wait was most of the level's 0.2–0.6 ms per thread
 * wait (investigations/twin/results/handoff_probe): counted as the pool's, the twin
 * charged it twice, as a hand-off and in its CPU queue.
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
    private Windows.Intervals handingOff;
    private double lastReleased = Double.NEGATIVE_INFINITY;
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
        handingOff = new Windows.Intervals(origin, window);
        events = new LinkedHashMap<>();
        for (String e : EVENTS) {
            events.put(e, new Windows.Counts(origin, window));
        }
    }

    private void levels(double now) {
        busyLevel.set(now, busy);
        queuedLevel.set(now, queued);
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

    /** A wait ends now, granted or not. */
    synchronized void waitEnds(double now) {
        queued--;
        levels(now);
    }

    /**
     * A wait that began at `asked` is granted at `now`, its thread having spent
     * `runQueued` seconds of it runnable on a run queue (0 where not measured): its
     * hand-off, the part of the wait after a token came free, less that.
     */
    synchronized void handedOver(double asked, double now, double runQueued) {
        double from = Math.max(asked, lastReleased);
        double to = now - Math.max(0.0, runQueued);
        if (to > from) {
            handingOff.add(from, to);
        }
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
        lastReleased = now;
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

    /** After a resize: the free tokens changed. */
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
        out.put("handing_off", handingOff.windows(List.of(), now, n));
        for (String e : EVENTS) {
            out.put(e, events.get(e).windows(n));
        }
        return out;
    }
}
