package tierlab.bookstore;

/** No token for this request: its wait timed out. The request is rejected (HTTP 503), as pool.py's PoolRejected. */
final class PoolRejected extends RuntimeException {
    private static final long serialVersionUID = 1L;

    PoolRejected(String pool, String reason) {
        super("no " + pool + " token: " + reason);
    }
}
