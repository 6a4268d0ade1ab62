package tierlab.bookstore;

import org.apache.tomcat.util.net.NioEndpoint;

/**
 * Tomcat's NIO endpoint with Workers as its own executor. Tomcat reports the thread
 * limit of an executor it made (JMX's ThreadPool maxThreads, hence OpenTelemetry's
 * tomcat.thread.max) but -1 for one set from outside; made here, Workers counts as its
 * own, so the telemetry says M. The limit follows each resize.
 */
final class Endpoint extends NioEndpoint {
    private final Workers workers;

    Endpoint(Workers workers) {
        this.workers = workers;
        setMaxThreads(workers.getMaximumPoolSize());
        workers.onResize(this::setMaxThreads);
    }

    @Override
    public void createExecutor() {
        setExecutor(workers);
        internalExecutor = true;
    }
}
