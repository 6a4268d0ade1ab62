package tierlab.bookstore;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Per-window observation, as python/tierlab/live/server/windows.py does it: a
 * piecewise-constant level integrated over each window with its maximum there, and
 * events counted per window. Times are seconds on the monotonic clock that every
 * process of the machine shares (System.nanoTime is CLOCK_MONOTONIC on Linux, the
 * clock of Python's time.monotonic), so the testbed's origin applies here unchanged.
 * Not thread-safe: the owner updates under its own lock.
 */
final class Windows {
    private Windows() {}

    /** Seconds on the machine's monotonic clock. */
    static double now() {
        return System.nanoTime() / 1e9;
    }

    static int index(double origin, double window, double t) {
        return Math.max(0, (int) Math.floor((t - origin) / window));
    }

    static List<Double> first(List<Double> values, int n) {
        List<Double> out = new ArrayList<>(values.subList(0, Math.min(n, values.size())));
        out.addAll(Collections.nCopies(n - out.size(), 0.0));
        return out;
    }

    /** A level's per-window integral (value × seconds) and maximum. */
    static final class Level {
        final double origin;
        final double window;
        private double value;
        private double last;
        private final List<Double> area = new ArrayList<>();
        private final List<Double> peak = new ArrayList<>();

        Level(double origin, double window, double value) {
            this.origin = origin;
            this.window = window;
            this.value = value;
            this.last = origin;
        }

        private void grow(int i) {
            while (area.size() <= i) {
                area.add(0.0); // a window starts at the level it inherits
                peak.add(value);
            }
        }

        /** The level becomes {@code v} at {@code now}, the old value integrated up to now. */
        void set(double now, double v) {
            int i = index(origin, window, last);
            double t = last;
            grow(index(origin, window, now));
            while (t < now) {
                double end = Math.min(now, origin + (i + 1) * window);
                area.set(i, area.get(i) + value * (end - t));
                t = end;
                i++;
            }
            last = Math.max(last, now);
            value = v;
            int k = index(origin, window, now);
            peak.set(k, Math.max(peak.get(k), v));
        }

        List<Double> areas(double now, int n) {
            set(now, value);
            grow(n - 1);
            return first(area, n);
        }

        List<Double> peaks(int n) {
            grow(n - 1);
            return first(peak, n);
        }
    }

    /** Events (or amounts) per window. */
    static final class Counts {
        final double origin;
        final double window;
        private final List<Double> counts = new ArrayList<>();

        Counts(double origin, double window) {
            this.origin = origin;
            this.window = window;
        }

        void add(double now, double amount) {
            int i = index(origin, window, now);
            while (counts.size() <= i) {
                counts.add(0.0);
            }
            counts.set(i, counts.get(i) + amount);
        }

        List<Double> windows(int n) {
            return first(counts, n);
        }
    }

    /**
     * A level made of intervals that may be reported late and out of order (a request's
     * [arrival, end], known only when it ends): each adds its overlap with every window
     * it spans, the same integral the Python server's Level gives for requests in
     * progress. Those still open are added, up to now, when read.
     */
    static final class Intervals {
        final double origin;
        final double window;
        private final List<Double> area = new ArrayList<>();

        Intervals(double origin, double window) {
            this.origin = origin;
            this.window = window;
        }

        void add(double start, double end) {
            add(area, Math.max(start, origin), end);
        }

        private void add(List<Double> into, double start, double end) {
            int i = index(origin, window, start);
            double t = start;
            while (t < end) {
                double to = Math.min(end, origin + (i + 1) * window);
                while (into.size() <= i) {
                    into.add(0.0);
                }
                into.set(i, into.get(i) + (to - t));
                t = to;
                i++;
            }
        }

        /** The first n windows, with the open intervals (their starts) counted up to now. */
        List<Double> windows(Iterable<Double> openStarts, double now, int n) {
            List<Double> out = new ArrayList<>(area);
            for (double s : openStarts) {
                add(out, Math.max(s, origin), now);
            }
            return first(out, n);
        }
    }
}
