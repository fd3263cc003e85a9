package io.github.nodeid.client;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * Gets Snowflake IDs from the broker's {@code GET /ids?n=K}: every ID is
 * issued by the broker under its own fence, none after its lease is lost,
 * whatever the clocks do. One HTTP/1.1 request (on a kept-alive connection)
 * per call, unless {@link Options#prefetch(int)} keeps a batch fetched ahead:
 * batch with {@link #nextIds(int)}, or prefetch. Safe for concurrent use.
 *
 * <pre>{@code
 * HttpGenerator gen = new HttpGenerator();   // NODEID_URL, the broker's URL
 * long[] ids = gen.nextIds(100);
 * }</pre>
 */
public final class HttpGenerator implements IdGenerator {

    /** The default connect and request timeouts: 2 s. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

    /** The default {@link Options#prefetchMaxAge(Duration)}: 1 s. */
    public static final Duration DEFAULT_PREFETCH_MAX_AGE = Duration.ofSeconds(1);

    /**
     * The variable {@code nodeid-broker run} (for its child) and the deploy
     * kit (for the application) set to the broker's base URL.
     */
    public static final String URL_VARIABLE = "NODEID_URL";

    private final String idsPrefix;
    private final HttpClient client;
    private final Duration requestTimeout;
    private final int prefetch;
    private final long maxAgeNanos; // Long.MAX_VALUE for no limit
    private final LongSupplier nanoClock; // monotonic, ns
    private final boolean mutantLatestVersion;

    // Prefetching, under this object's lock: the batch in use (its IDs from
    // pos on are unused), the next one, and the one fetch at a time that
    // fills it. A batch is usable by a call that starts no later than
    // maxAgeNanos after its fetch was sent (nanoClock's times).
    private long[] ids = new long[0];
    private int pos;
    private int nodeId;
    private long version;
    private int low; // from this pos on the next batch is fetched
    private long sent; // when the batch in use was asked for
    private Batch ready;
    private long readySent; // and the next one
    private long fetching; // the number of the fetch under way, 0 for none
    private long fetchingSent; // and when it was sent
    private long fetches; // fetches started
    private long failedFetch; // the number of the last fetch that failed
    private RuntimeException failure; // and why

    /**
     * A generator on the broker whose base URL is the variable
     * {@value #URL_VARIABLE}, with the default options.
     *
     * @throws IllegalStateException when the variable is not set
     * @throws IllegalArgumentException when it is not a URL of the broker
     */
    public HttpGenerator() {
        this(new Options());
    }

    /**
     * A generator on the broker whose base URL is the variable
     * {@value #URL_VARIABLE}.
     *
     * @param options the timeouts and the prefetch
     * @throws IllegalStateException when the variable is not set
     * @throws IllegalArgumentException when it is not a URL of the broker
     */
    public HttpGenerator(Options options) {
        this(envURL(), options);
    }

    /**
     * A generator on the broker at base, with 2 s timeouts.
     *
     * @param base the broker's base URL, e.g. {@code http://127.0.0.1:8080},
     *     or its {@code /ids} URL
     */
    public HttpGenerator(URI base) {
        this(base, new Options());
    }

    /**
     * A generator on the broker at base.
     *
     * @param base the broker's base URL or its {@code /ids} URL
     * @param connectTimeout bound on opening a connection
     * @param requestTimeout bound on each request, from sending it to the
     *     answer's headers
     * @throws IllegalArgumentException for a URL that is not http(s) or has a
     *     query or fragment
     */
    public HttpGenerator(URI base, Duration connectTimeout, Duration requestTimeout) {
        this(base, new Options().connectTimeout(connectTimeout).requestTimeout(requestTimeout));
    }

    /**
     * A generator on the broker at base.
     *
     * @param base the broker's base URL, e.g. {@code http://127.0.0.1:8080},
     *     or its {@code /ids} URL
     * @param options the timeouts and the prefetch
     * @throws IllegalArgumentException for a URL that is not http(s) or has a
     *     query or fragment
     */
    public HttpGenerator(URI base, Options options) {
        Objects.requireNonNull(base, "base");
        String scheme = base.getScheme();
        if (!"http".equals(scheme) && !"https".equals(scheme) || base.getHost() == null
                || base.getRawQuery() != null || base.getRawFragment() != null) {
            throw new IllegalArgumentException("base URL " + base + ": want http://HOST:PORT[/PATH], no query");
        }
        String b = base.toString().replaceAll("/+$", "");
        if (b.endsWith("/ids")) {
            b = b.substring(0, b.length() - "/ids".length());
        }
        this.idsPrefix = b + "/ids?n=";
        this.requestTimeout = options.requestTimeout;
        this.prefetch = options.prefetch;
        this.maxAgeNanos = options.maxAgeNanos;
        this.nanoClock = options.nanoClock;
        this.mutantLatestVersion = options.mutantLatestVersion;
        this.client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(options.connectTimeout)
                .followRedirects(HttpClient.Redirect.NEVER)
                .build();
    }

    private static URI envURL() {
        String v = System.getenv(URL_VARIABLE);
        if (v == null || v.isEmpty()) {
            throw new IllegalStateException("no URL given and " + URL_VARIABLE + " is not set: pass the broker's base URL (e.g. http://127.0.0.1:8080) or set "
                    + URL_VARIABLE + " (nodeid-broker run sets it for its child, the deploy kit for the application)");
        }
        try {
            return new URI(v);
        } catch (java.net.URISyntaxException e) {
            throw new IllegalArgumentException(URL_VARIABLE + "=" + v + ": not a URL: " + e.getMessage(), e);
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>With a prefetch, most calls take the ID from the batch fetched ahead.
     */
    @Override
    public long nextId() {
        if (prefetch > 0) {
            long now = nanoClock.getAsLong();
            synchronized (this) {
                if (pos < ids.length && now - sent <= maxAgeNanos) {
                    long id = ids[pos++];
                    if (pos >= low) {
                        fetchAhead();
                    }
                    return id;
                }
            }
            return take(1, now).ids()[0];
        }
        return fetch(1).ids()[0];
    }

    /**
     * {@inheritDoc}
     *
     * <p>The IDs come from one answer of the broker, with its node ID and
     * version; the batch's claim is null. With a prefetch, they are taken
     * from the batch fetched ahead when it has n left, else from the next
     * one (the rest of this one is skipped); a batch whose fetch was sent
     * longer than the prefetch's max age ago is skipped.
     *
     * @throws UnavailableException the broker answered 503 (no valid lease now)
     * @throws NodeIdException any other status, an answer that is not the
     *     protocol's, an I/O error or timeout (its cause), an interrupt
     */
    @Override
    public Batch nextBatch(int n) {
        IdGenerator.checkCount(n);
        return prefetch > 0 ? take(n, nanoClock.getAsLong()) : fetch(n);
    }

    /**
     * Takes n IDs from the prefetched batch, moving to the next one (or
     * waiting for it, or fetching it) when this one has fewer left or is too
     * old for a call started at now.
     */
    private synchronized Batch take(int n, long now) {
        while (true) {
            if (ids.length - pos >= n && now - sent <= maxAgeNanos) {
                long[] out = Arrays.copyOfRange(ids, pos, pos + n);
                pos += n;
                if (pos >= low) {
                    fetchAhead();
                }
                return new Batch(out, nodeId, version, null);
            }
            if (ready != null) {
                use(ready, readySent); // if too old, skipped above
                continue;
            }
            // The fetch under way, unless none is or it was sent too long ago.
            long k = fetching != 0 && now - fetchingSent <= maxAgeNanos ? fetching : start(Math.max(n, prefetch));
            try {
                while (fetching == k) {
                    wait();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new NodeIdException("GET " + idsPrefix + n + ": interrupted", e);
            }
            if (failedFetch == k && ready == null) {
                throw failure;
            }
        }
    }

    /** Makes b the batch in use (the rest of the one before is skipped). */
    private void use(Batch b, long sentAt) {
        ids = b.ids();
        sent = sentAt;
        pos = 0;
        nodeId = b.nodeId();
        version = b.version();
        low = ids.length - prefetch / 2;
        ready = null;
    }

    /** Starts fetching the next batch unless it is there or under way. */
    private void fetchAhead() {
        if (ready == null && fetching == 0) {
            start(prefetch);
        }
    }

    /**
     * Starts fetch number k of n IDs in a daemon thread; returns k. A fetch
     * under way that was sent too long ago is left to end alone.
     */
    private long start(int n) {
        long k = ++fetches;
        long at = nanoClock.getAsLong(); // before the request is sent
        Thread t = new Thread(() -> fill(k, n, at), "nodeid-prefetch");
        t.setDaemon(true);
        t.start();
        fetching = k; // the thread waits for this object's lock, held here, to report
        fetchingSent = at;
        return k;
    }

    /** Fetch k, sent at at: GETs n IDs into ready, or records why not. */
    private void fill(long k, int n, long at) {
        Batch b = null;
        RuntimeException err = null;
        try {
            b = fetch(n);
        } catch (RuntimeException e) {
            err = e;
        } finally {
            synchronized (this) {
                if (fetching == k) {
                    fetching = 0;
                }
                if (b != null) {
                    if (ready == null || at - readySent > 0) { // not over a fresher one
                        ready = b;
                        readySent = at;
                    }
                    if (mutantLatestVersion) {
                        nodeId = b.nodeId();
                        version = b.version();
                    }
                } else {
                    failedFetch = k;
                    failure = err != null ? err : new NodeIdException("GET " + idsPrefix + n + ": the fetch failed");
                }
                notifyAll();
            }
        }
    }

    /** GETs n IDs: the answer's batch, or its error. */
    private Batch fetch(int n) {
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

    /**
     * The options of an {@link HttpGenerator}, set fluently:
     * {@code new HttpGenerator.Options().prefetch(10000)}. The generator
     * copies them when it is made.
     */
    public static final class Options {
        private Duration connectTimeout = DEFAULT_TIMEOUT;
        private Duration requestTimeout = DEFAULT_TIMEOUT;
        private int prefetch;
        private long maxAgeNanos = DEFAULT_PREFETCH_MAX_AGE.toNanos();
        private LongSupplier nanoClock = System::nanoTime;
        private boolean mutantLatestVersion;

        /** The defaults: 2 s timeouts, no prefetch, a prefetch max age of 1 s. */
        public Options() {}

        /**
         * Sets the bound on opening a connection (default 2 s).
         *
         * @param d the bound
         * @return this
         */
        public Options connectTimeout(Duration d) {
            this.connectTimeout = Objects.requireNonNull(d, "connectTimeout");
            return this;
        }

        /**
         * Sets the bound on each request, from sending it to the answer's
         * headers (default 2 s).
         *
         * @param d the bound
         * @return this
         */
        public Options requestTimeout(Duration d) {
            this.requestTimeout = Objects.requireNonNull(d, "requestTimeout");
            return this;
        }

        /**
         * Keeps a batch of p IDs fetched ahead, the next one fetched (in a
         * daemon thread) once half of it is used, so that most calls need no
         * round trip (default 0: off). The broker issued every ID under its
         * fence, so a prefetched ID stays unique whenever it is used; it
         * carries the time it was fetched. Once the prefetched IDs are used
         * up, a failing broker's error is the call's.
         *
         * @param p 0 (off) to {@value IdGenerator#MAX_BATCH}
         * @return this
         */
        public Options prefetch(int p) {
            if (p < 0 || p > MAX_BATCH) {
                throw new IllegalArgumentException("prefetch " + p + ": want 0 (off).." + MAX_BATCH);
            }
            this.prefetch = p;
            return this;
        }

        /**
         * Bounds how old a prefetched ID's time may be (default 1 s): a call
         * skips a batch whose fetch was sent longer ago than d (on
         * {@link System#nanoTime()}, before the call) and uses one fetched
         * anew, so that IDs stay roughly in time order after an idle spell.
         *
         * @param d a positive duration, or null for no limit
         * @return this
         * @throws IllegalArgumentException for zero, a negative duration or
         *     one beyond a long of nanoseconds
         */
        public Options prefetchMaxAge(Duration d) {
            if (d == null) {
                this.maxAgeNanos = Long.MAX_VALUE;
                return this;
            }
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("prefetchMaxAge " + d + ": want a positive duration, or null for no limit");
            }
            try {
                this.maxAgeNanos = d.toNanos();
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("prefetchMaxAge " + d + ": too long (null for no limit)", e);
            }
            return this;
        }

        /**
         * Testing only: the monotonic clock, in ns, that prefetched batches'
         * ages are measured on (default {@link System#nanoTime()}).
         */
        Options nanoClock(LongSupplier c) {
            this.nanoClock = Objects.requireNonNull(c, "nanoClock");
            return this;
        }

        /**
         * Testing only, never in production: {@code prefetch-latest-version}
         * reports prefetched IDs with the node ID and version of the latest
         * answer, for the conformance suite to show it catches it.
         *
         * @param name that name; null or "" for none
         * @return this
         * @throws IllegalArgumentException for another name
         */
        public Options testingMutation(String name) {
            if (name != null && !name.isEmpty() && !"prefetch-latest-version".equals(name)) {
                throw new IllegalArgumentException("unknown mutation \"" + name + "\": want prefetch-latest-version");
            }
            this.mutantLatestVersion = name != null && !name.isEmpty();
            return this;
        }
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
