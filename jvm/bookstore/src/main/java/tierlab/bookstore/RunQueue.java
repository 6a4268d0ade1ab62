package tierlab.bookstore;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The calling thread's time on a CPU's run queue: runnable, not running (Linux's
 * run_delay in /proc/thread-self/schedstat, nanoseconds since the thread started). The
 * pools take it out of their hand-offs (PoolStats.handedOver). A read costs about 10 µs
 * (100,000 reads in a loop, Java 17, on the 2-core test machine, 2026-11-28): 2% of a
 * request's 0.56 ms of CPU. So the pools read it only around waits: a connection waiter
 * at its wait's ends, a worker when it leaves a task with none queued (it is about to
 * park: every request when the load is light, few when tasks queue) and when it takes a
 * waited task.
 */
final class RunQueue {
    private static final Path SCHEDSTAT = Path.of("/proc/thread-self/schedstat");

    private RunQueue() {}

    /** Seconds; NaN where the kernel does not say (no schedstat: the pools then count the whole hand-off). */
    static double delay() {
        try {
            String[] f = Files.readString(SCHEDSTAT).trim().split("\\s+");
            return Long.parseLong(f[1]) / 1e9;
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    /** The run-queue seconds since `before` (a `delay()` of the same thread); 0 if either is unknown. */
    static double since(double before) {
        double d = delay() - before;
        return Double.isNaN(d) ? 0.0 : d;
    }
}
