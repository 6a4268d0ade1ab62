package tierlab.bookstore;

import java.io.ByteArrayOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * A Java agent of the bookstore's own jar, placed before the OpenTelemetry agent
 * (`-javaagent:bookstore.jar=FILE -javaagent:opentelemetry-javaagent.jar …`): the process's
 * stdout becomes FILE, written a whole line at a time. The OpenTelemetry agent's stdout
 * exporters (one JSON export request per line) write traces and metrics from two threads
 * in chunks of a few kilobytes each; straight to a stream their long lines interleave.
 * Here each thread's bytes wait until their line ends and the line goes out whole. The
 * server's own logs go to stderr, so the file holds the exporters' lines alone.
 */
public final class OtelOut extends OutputStream {
    private final OutputStream file;
    private final ThreadLocal<ByteArrayOutputStream> pending = ThreadLocal.withInitial(ByteArrayOutputStream::new);

    private OtelOut(OutputStream file) {
        this.file = file;
    }

    public static void premain(String path) throws IOException {
        if (path == null || path.isEmpty()) {
            throw new IllegalArgumentException("-javaagent:bookstore.jar=FILE: the file for the OpenTelemetry lines is missing");
        }
        System.setOut(new PrintStream(new OtelOut(new FileOutputStream(path, true)), false, StandardCharsets.UTF_8));
    }

    @Override
    public void write(int b) throws IOException {
        ByteArrayOutputStream line = pending.get();
        line.write(b);
        if (b == '\n') {
            emit(line);
        }
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        ByteArrayOutputStream line = pending.get();
        for (int i = off; i < off + len; i++) {
            line.write(b[i]);
            if (b[i] == '\n') {
                emit(line);
            }
        }
    }

    private void emit(ByteArrayOutputStream line) throws IOException {
        synchronized (file) {
            line.writeTo(file);
            file.flush();
        }
        line.reset();
    }
}
