package tierlab.bookstore;

import com.fasterxml.jackson.jr.ob.JSON;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What this server shares with the Python bookstore, read from the files beside
 * python/tierlab/live/server/bookstore/app.py that the build bundles: the SQL statements
 * by name (statements.sql) and the vocabulary of the pages (vocabulary.json).
 */
final class Shared {
    private Shared() {}

    static String resource(String name) {
        try (InputStream in = Shared.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException(name + " is not in the jar: build it with jvm/bookstore/pom.xml, which bundles it from the Python bookstore");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** statements.sql: each `-- name: NAME` line names the statement on the lines after it (data.py's `statements()`). */
    static Map<String, String> statements() {
        Map<String, String> out = new HashMap<>();
        String name = null;
        for (String line : resource("statements.sql").split("\n", -1)) {
            if (line.startsWith("-- name:")) {
                name = line.substring("-- name:".length()).strip();
                out.put(name, "");
            } else if (name != null && !line.isBlank() && !line.startsWith("--")) {
                out.put(name, (out.get(name) + " " + line.strip()).strip());
            }
        }
        return out;
    }

    /** vocabulary.json: a list of words by name (subjects, ship_types, …). */
    static List<String> vocabulary(String key) {
        try {
            Object list = JSON.std.mapFrom(resource("vocabulary.json")).get(key);
            if (!(list instanceof List<?> words)) {
                throw new IllegalStateException("vocabulary.json has no list " + key);
            }
            return words.stream().map(String::valueOf).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Python's html.escape (quote=True). */
    static String escape(Object value) {
        String s = String.valueOf(value);
        StringBuilder b = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '&' -> b.append("&amp;");
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#x27;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }

    /** A number as Python's f"{x:.2f}" writes it: the binary value rounded half to even. */
    static String money(Object value) {
        return new java.math.BigDecimal(((Number) value).doubleValue()).setScale(2, java.math.RoundingMode.HALF_EVEN).toPlainString();
    }

    static Map<String, Object> error(String message) {
        Map<String, Object> out = new HashMap<>();
        out.put("error", message);
        return out;
    }
}
