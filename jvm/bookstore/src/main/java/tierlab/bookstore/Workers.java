package tierlab.bookstore;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

/**
 * Tomcat's worker threads: M of them (core = max = M), the connector's executor. The
 * poller hands it a socket whose request has arrived; the task waits here, FIFO, for a
 * worker. Each task carries the instant it was handed over, so the servlet filter knows
 * when its request arrived and how long it waited for a thread (wait_thread), which no
 * servlet API says. Resized at run time (setCorePoolSize/setMaximumPoolSize): a smaller
 * size takes no thread from a request, only lets it end when idle.
 */
final class Workers extends ThreadPoolExecutor {
    /** The hand-over of the task now running on this thread, until a request takes it. */
    private static final ThreadLocal<Dispatch> DISPATCH = new ThreadLocal<>();
    /** Read once with the pool's class, so that the probe, if on, reports from the server's start. */
    private static final boolean PROBE = HandOffProbe.ON;

    record Dispatch(double arrived, boolean waited) {}

    /** A worker's last release: when, and its run-queue seconds then (NaN: not read). */
    private record Released(double time, double runDelay) {}

    /** This worker's last release, for the hand-off of the next waited task it takes. */
    private static final ThreadLocal<Released> RELEASED = new ThreadLocal<>();

    final PoolStats stats;
    private final AtomicInteger running = new AtomicInteger();
    private volatile IntConsumer resized = size -> {};

    Workers(int threads, double timeout) {
        super(threads, threads, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), new Named());
        stats = new PoolStats(this::getMaximumPoolSize, timeout);
        prestartAllCoreThreads();
    }

    private static final class Named implements ThreadFactory {
        private final AtomicInteger n = new AtomicInteger();

        @Override
        public Thread newThread(Runnable r) {
            Thread t = new Thread(r, "worker-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        }
    }

    @Override
    public void execute(Runnable task) {
        double now = Windows.now();
        boolean waited = running.get() >= getMaximumPoolSize() || !getQueue().isEmpty();
        if (waited) {
            stats.waitBegins(now);
        }
        super.execute(() -> {
            double start = Windows.now();
            if (waited) {
                stats.waitEnds(start);
                Released last = RELEASED.get();
                // A worker idle when the task came was parked: once woken, its wait for a
                // core is the CPU's queue, which a model holds in its CPU station.
                boolean woken = last == null || last.time < now;
                double runQueued = woken && last != null ? RunQueue.since(last.runDelay) : 0.0;
                stats.handedOver(now, start, runQueued);
                if (PROBE) {
                    HandOffProbe.add(!woken, start - (woken ? now : last.time), runQueued);
                }
            }
            // The worker is held from its task's start to its end, as the model's threads
            // token is held for the whole request (counted in the servlet filter instead,
            // the response's write and Tomcat's own work after it would look like a token
            // free while requests wait). The filter counts the grant, once it knows the
            // task carries a request.
            stats.taken(start);
            running.incrementAndGet();
            DISPATCH.set(new Dispatch(now, waited));
            try {
                task.run();
            } finally {
                DISPATCH.remove();
                running.decrementAndGet();
                double end = Windows.now();
                stats.released(end);
                // Read only where the worker is about to park (nothing queued): one that goes
                // straight on to a queued task spends microseconds on a run queue
                // (handoff_probe: 2-10 µs of its 20-35 µs hand-off), not worth a read each.
                RELEASED.set(new Released(end, getQueue().isEmpty() ? RunQueue.delay() : Double.NaN));
            }
        });
    }

    /** The hand-over of this thread's task, once: a second request on the same task (pipelined) arrived when the first ended. */
    static Dispatch take() {
        Dispatch d = DISPATCH.get();
        DISPATCH.remove();
        return d;
    }

    /** Also tell `listener` each new size (Tomcat's endpoint, which reports it). */
    void onResize(IntConsumer listener) {
        resized = listener;
    }

    synchronized void resize(int threads) {
        if (threads >= getMaximumPoolSize()) {
            setMaximumPoolSize(threads);
            setCorePoolSize(threads);
            prestartAllCoreThreads();
        } else {
            setCorePoolSize(threads);
            setMaximumPoolSize(threads);
        }
        resized.accept(threads);
        stats.resized(Windows.now());
    }
}
