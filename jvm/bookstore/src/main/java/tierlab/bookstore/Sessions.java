package tierlab.bookstore;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A session's state (its cart and visit count) in this server's memory: the Python
 * bookstore's LocalSessions (sessions.py), the least recently served forgotten first
 * beyond MAX_LOCAL. A session served elsewhere starts afresh here.
 */
final class Sessions {
    static final int MAX_LOCAL = 100_000;

    record State(Long cart, long visits) {}

    private long created;
    private final Map<String, State> states = new LinkedHashMap<>(1024, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, State> eldest) {
            return size() > MAX_LOCAL;
        }
    };

    /** The session's state; null for a new one (counted as created). */
    synchronized State load(String session) {
        State s = states.get(session);
        if (s == null) {
            created++;
        }
        return s;
    }

    synchronized void save(String session, State state) {
        states.put(session, state);
    }

    synchronized void forget() {
        states.clear();
    }

    synchronized Map<String, Object> counts() {
        return Map.of("created", created, "migrations", 0L);
    }
}
