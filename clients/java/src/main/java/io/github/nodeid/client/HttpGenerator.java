package io.github.nodeid.client;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Gets Snowflake IDs from the broker's {@code GET /ids?n=K}: every ID is
 * issued by the broker under its own fence, none after its lease is lost,
 * whatever the clocks do. One HTTP/1.1 request (on a kept-alive connection)
 * per call: batch with {@link #nextIds(int)}. Safe for concurrent use.
 *
 * <pre>{@code
 * HttpGenerator gen = new HttpGenerator(URI.create("http://127.0.0.1:8080"));
 * long[] ids = gen.nextIds(100);
 * }</pre>
 */
public final class HttpGenerator implements IdGenerator {

    /** The default connect and request timeouts: 2 s. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

    private final String idsPrefix;
    private final HttpClient client;
    private final Duration requestTimeout;

    /**
     * A generator on the broker at base, with 2 s timeouts.
     *
     * @param base the broker's base URL, e.g. {@code http://127.0.0.1:8080}
     */
    public HttpGenerator(URI base) {
        this(base, DEFAULT_TIMEOUT, DEFAULT_TIMEOUT);
    }

    /**
     * A generator on the broker at base.
     *
     * @param base the broker's base URL, e.g. {@code http://127.0.0.1:8080}
     *     ({@code /ids} is appended to its path)
     * @param connectTimeout bound on opening a connection
     * @param requestTimeout bound on each request, from sending it to the
     *     answer's headers
     * @throws IllegalArgumentException for a URL that is not http(s) or has a
     *     query or fragment
     */
    public HttpGenerator(URI base, Duration connectTimeout, Duration requestTimeout) {
        Objects.requireNonNull(base, "base");
        String scheme = base.getScheme();
        if (!"http".equals(scheme) && !"https".equals(scheme) || base.getHost() == null
                || base.getRawQuery() != null || base.getRawFragment() != null) {
            throw new IllegalArgumentException("base URL " + base + ": want http://HOST:PORT[/PATH], no query");
        }
        String b = base.toString();
        this.idsPrefix = (b.endsWith("/") ? b.substring(0, b.length() - 1) : b) + "/ids?n=";
        this.requestTimeout = Objects.requireNonNull(requestTimeout, "requestTimeout");
        this.client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Objects.requireNonNull(connectTimeout, "connectTimeout"))
                .followRedirects(HttpClient.Redirect.NEVER)
                .build();
    }

    /**
     * {@inheritDoc}
     *
     * <p>The batch's claim is null: the broker's answer carries the node ID and
     * version only.
     *
     * @throws UnavailableException the broker answered 503 (no valid lease now)
     * @throws NodeIdException any other status, an answer that is not the
     *     protocol's, an I/O error or timeout (its cause), an interrupt
     */
    @Override
    public Batch nextBatch(int n) {
        IdGenerator.checkCount(n);
        URI uri = URI.create(idsPrefix + n);
        HttpRequest req = HttpRequest.newBuilder(uri).timeout(requestTimeout).GET().build();
        HttpResponse<byte[]> resp;
        try {
            resp = client.send(req, HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new NodeIdException("GET " + uri + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NodeIdException("GET " + uri + ": interrupted", e);
        }
        int status = resp.statusCode();
        if (status == 200) {
            try {
                return parseIds(resp.body(), n);
            } catch (Json.Invalid e) {
                throw new NodeIdException("GET " + uri + ": bad answer: " + e.getMessage());
            }
        }
        String reason = reason(resp.body());
        if (status == 503) {
            throw new UnavailableException("GET " + uri + ": 503 unavailable: " + reason, reason);
        }
        throw new NodeIdException("GET " + uri + ": HTTP " + status + ": " + reason);
    }

    /** Returns the reason of an error answer: its JSON reason, else its text. */
    private static String reason(byte[] body) {
        try {
            Object r = Json.parseObject(body).get("reason");
            if (r instanceof String s) {
                return s;
            }
        } catch (Json.Invalid e) {
            // not the broker's JSON: the text itself
        }
        String s = new String(body, StandardCharsets.UTF_8).strip();
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }

    /**
     * Parses an answer {@code {"nodeId":7,"version":3,"ids":["123","124"]}}
     * (other fields ignored) that must hold n IDs, strictly increasing, all
     * with node ID nodeId.
     *
     * @throws Json.Invalid with the reason
     */
    static Batch parseIds(byte[] body, int n) throws Json.Invalid {
        Map<String, Object> m = Json.parseObject(body);
        int nodeId = (int) Json.field(m, "nodeId", Snowflake.MAX_NODE_ID);
        long version = Json.field(m, "version", Long.MAX_VALUE);
        if (!(m.get("ids") instanceof List<?> list)) {
            throw new Json.Invalid("field ids " + (m.containsKey("ids") ? "is not an array" : "missing"));
        }
        if (list.size() != n) {
            throw new Json.Invalid(list.size() + " IDs, " + n + " asked for");
        }
        long[] ids = new long[n];
        for (int k = 0; k < n; k++) {
            long id = parseId(list.get(k));
            if (k > 0 && id <= ids[k - 1]) {
                throw new Json.Invalid("IDs not increasing: " + ids[k - 1] + " then " + id);
            }
            if (Snowflake.decode(id).nodeId() != nodeId) {
                throw new Json.Invalid("ID " + id + " is not of node " + nodeId);
            }
            ids[k] = id;
        }
        return new Batch(ids, nodeId, version, null);
    }

    /** Parses one ID: a string of decimal digits, within a long. */
    private static long parseId(Object v) throws Json.Invalid {
        if (v instanceof String s && !s.isEmpty() && s.length() <= 19 && s.chars().allMatch(c -> c >= '0' && c <= '9')) {
            try {
                return Long.parseLong(s);
            } catch (NumberFormatException e) {
                // beyond a long: below
            }
        }
        throw new Json.Invalid("an ID is not a decimal string within a long: " + v);
    }
}
