package tierlab.bookstore;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.DoubleAdder;
import java.util.concurrent.atomic.LongAdder;

/**
 * What a worker's hand-off to a waiting request is made of (issue 41; off unless the JVM
 * runs with -Dtierlab.handoff.probe=true, as investigations/twin/handoff_probe.py starts
 * it). The pool counts a token "handing off" while it is free and a request waits, and the
 * twin calibrates on that figure (729 µs per thread wait under a one-core budget). For
 * each waited task this probe takes the hand-off as its worker lived it — from the later
 * of the task's enqueue and the worker's previous release to the task's start — and the
 * part the worker spent runnable but not running (Linux's run_delay of the thread,
 * /proc/thread-self/schedstat), apart for a worker that came straight from its previous
 * task ("continued": it was busy when the task was queued) and one that was idle and had
 * to be woken ("woken"). If the hand-off is mostly run_delay, it is the CPU's queue, which
 * the twin's CPU station already holds, and not a cost of the pool. Sums since the start
 * go to stderr (the server's log) every second.
 */
final class HandOffProbe {
    static final boolean ON = Boolean.getBoolean("tierlab.handoff.probe");
    private static final Path SCHEDSTAT = Path.of("/proc/thread-self/schedstat");
    private static final ThreadLocal<double[]> RELEASED = new ThreadLocal<>(); // {time, run_delay} at the worker's last release

    private static final Kind CONTINUED = new Kind("continued");
    private static final Kind WOKEN = new Kind("woken");

    private HandOffProbe() {}

    private static final class Kind {
        final String name;
        final LongAdder n = new LongAdder();
        final DoubleAdder gap = new DoubleAdder();
        final DoubleAdder runDelay = new DoubleAdder();

        Kind(String name) {
            this.name = name;
        }

        String line() {
            return String.format("%s n=%d hand_off_s=%.6f run_delay_s=%.6f", name, n.sum(), gap.sum(), runDelay.sum());
        }
    }

    static {
        if (ON) {
            Thread t = new Thread(HandOffProbe::report, "handoff-probe");
            t.setDaemon(true);
            t.start();
        }
    }

    /** Seconds this thread has waited on a run queue since it started (0 where schedstat is not readable). */
    private static double runDelay() {
        try {
            String[] f = Files.readString(SCHEDSTAT).trim().split("\\s+");
            return Long.parseLong(f[1]) / 1e9;
        } catch (IOException | RuntimeException e) {
            return 0.0;
        }
    }

    /** A waited task, queued at `enqueued`, starts now on this worker. */
    static void started(double enqueued, double start) {
        double[] last = RELEASED.get();
        if (last == null) {
            return; // the worker's first task: no release to measure from
        }
        Kind kind = last[0] > enqueued ? CONTINUED : WOKEN;
        kind.n.increment();
        kind.gap.add(start - Math.max(enqueued, last[0]));
        kind.runDelay.add(runDelay() - last[1]);
    }

    /** This worker's task has ended. */
    static void released(double now) {
        RELEASED.set(new double[] {now, runDelay()});
    }

    private static void report() {
        while (true) {
            try {
                Thread.sleep(1_000);
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("handoff probe: " + CONTINUED.line() + "; " + WOKEN.line());
        }
    }
}
