package tierlab.bookstore;

import java.util.concurrent.atomic.DoubleAdder;
import java.util.concurrent.atomic.LongAdder;

/**
 * The worker pool's hand-offs by kind, for investigations/twin/handoff_probe.py (issue
 * 41): off unless the JVM runs with -Dtierlab.handoff.probe=true. For each waited task,
 * its hand-off as its worker lived it — from the later of the task's enqueue and the
 * worker's previous release to the task's start — and the part the worker spent on a
 * run queue (RunQueue), apart for a worker that came straight from its previous task
 * ("continued": busy when the task was queued) and one that was idle and had to be
 * woken ("woken"). Sums since the start go to stderr (the server's log) every second.
 */
final class HandOffProbe {
    static final boolean ON = Boolean.getBoolean("tierlab.handoff.probe");

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

    /** A waited task's hand-off of `gap` seconds, `runQueued` of them on a run queue. */
    static void add(boolean continued, double gap, double runQueued) {
        Kind kind = continued ? CONTINUED : WOKEN;
        kind.n.increment();
        kind.gap.add(gap);
        kind.runDelay.add(runQueued);
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
