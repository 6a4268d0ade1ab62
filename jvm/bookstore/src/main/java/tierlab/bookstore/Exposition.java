package tierlab.bookstore;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The tier's metrics in the Prometheus text format (0.0.4), for `GET /metrics` when the
 * scraper asks for it (Accept: text/plain or OpenMetrics), as the Python server's
 * metrics.py exposes them: a histogram of response time per request type and outcome,
 * requests by outcome, requests in progress, and per pool its size, busy and queued, and
 * its acquired and rejected counts — read from the tier's state when scraped.
 */
final class Exposition {
    /** Seconds: from 1 ms (a cached page) to the 10 s a pool's waiter gives up at (metrics.py's BUCKETS). */
    static final double[] BUCKETS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0};

    private static final class Histogram {
        final long[] counts = new long[BUCKETS.length];
        long count;
        double sum;
    }

    private final String tier;
    private final Map<List<String>, Histogram> histograms = new TreeMap<>((a, b) -> (a.get(0) + "\0" + a.get(1)).compareTo(b.get(0) + "\0" + b.get(1)));

    Exposition(String tier) {
        this.tier = tier;
    }

    static boolean wanted(String accept) {
        return accept != null && (accept.contains("text/plain") || accept.contains("openmetrics"));
    }

    synchronized void observe(String type, String status, double seconds) {
        Histogram h = histograms.computeIfAbsent(List.of(type, status), k -> new Histogram());
        for (int i = 0; i < BUCKETS.length; i++) {
            if (seconds <= BUCKETS[i]) {
                h.counts[i]++;
            }
        }
        h.count++;
        h.sum += seconds;
    }

    private static String labels(String... pairs) {
        StringBuilder b = new StringBuilder("{");
        for (int i = 0; i < pairs.length; i += 2) {
            b.append(i == 0 ? "" : ",").append(pairs[i]).append("=\"")
                    .append(pairs[i + 1].replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")).append('"');
        }
        return b.append('}').toString();
    }

    private static String number(double v) {
        return String.format(Locale.ROOT, "%s", v);
    }

    private static void family(StringBuilder out, String name, String type, String help) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n');
        out.append("# TYPE ").append(name).append(' ').append(type).append('\n');
    }

    /** The exposition of `state` (Tier.metrics) and the histograms. */
    @SuppressWarnings("unchecked")
    synchronized String render(Map<String, Object> state) {
        StringBuilder out = new StringBuilder();
        family(out, "tierlab_response_seconds", "histogram", "Response time of the requests the tier finished, by request type and outcome.");
        for (Map.Entry<List<String>, Histogram> e : histograms.entrySet()) {
            String type = e.getKey().get(0);
            String status = e.getKey().get(1);
            Histogram h = e.getValue();
            for (int i = 0; i < BUCKETS.length; i++) {
                out.append("tierlab_response_seconds_bucket").append(labels("le", number(BUCKETS[i]), "status", status, "tier", tier, "type", type)).append(' ').append(number(h.counts[i])).append('\n');
            }
            out.append("tierlab_response_seconds_bucket").append(labels("le", "+Inf", "status", status, "tier", tier, "type", type)).append(' ').append(number(h.count)).append('\n');
            out.append("tierlab_response_seconds_count").append(labels("status", status, "tier", tier, "type", type)).append(' ').append(number(h.count)).append('\n');
            out.append("tierlab_response_seconds_sum").append(labels("status", status, "tier", tier, "type", type)).append(' ').append(number(h.sum)).append('\n');
        }
        family(out, "tierlab_requests_total", "counter", "Requests the tier finished, by outcome.");
        for (Map.Entry<String, Object> e : ((Map<String, Object>) state.get("requests")).entrySet()) {
            out.append("tierlab_requests_total").append(labels("status", e.getKey(), "tier", tier)).append(' ').append(number(((Number) e.getValue()).doubleValue())).append('\n');
        }
        family(out, "tierlab_in_progress", "gauge", "Requests in the tier now.");
        out.append("tierlab_in_progress").append(labels("tier", tier)).append(' ').append(number(((Number) state.get("in_progress")).doubleValue())).append('\n');
        Map<String, Map<String, Object>> pools = (Map<String, Map<String, Object>>) state.get("pools");
        String[][] families = {
            {"size", "gauge", "Pool tokens."}, {"busy", "gauge", "Pool tokens held now."}, {"queued", "gauge", "Pool requests waiting for a token now."},
            {"acquired", "counter", "Pool tokens granted since the server started."}, {"rejected", "counter", "Pool requests refused (time-out or full queue) since the server started."}
        };
        for (String[] f : families) {
            String name = "tierlab_pool_" + f[0] + (f[1].equals("counter") ? "_total" : "");
            family(out, name, f[1], f[2]);
            for (Map.Entry<String, Map<String, Object>> p : pools.entrySet()) {
                out.append(name).append(labels("pool", p.getKey(), "tier", tier)).append(' ').append(number(((Number) p.getValue().get(f[0])).doubleValue())).append('\n');
            }
        }
        return out.toString();
    }
}
