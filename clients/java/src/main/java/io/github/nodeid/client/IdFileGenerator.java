package io.github.nodeid.client;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * Issues Snowflake IDs in this process under the node ID that
 * {@code nodeid-broker --id-file PATH} writes to PATH, keeping the rules of
 * {@code clients/README.md}:
 *
 * <ol>
 *   <li>it issues an ID only while the file names a claim and the ID's
 *       timestamp is below the claim's {@code validUntilMs} (else
 *       {@link NotHeldException}, "expired");
 *   <li>it re-reads the file when its last reading is {@code rereadMillis}
 *       (1 s) old on {@link System#nanoTime()}, and on every call while the
 *       last reading was unusable or expired;
 *   <li>once the file names another {@code nodeId} or {@code version} than the
 *       first claim it used, it throws {@link VersionChangedException} from
 *       every call, for good;
 *   <li>it issues only timestamps above {@code floorMs} and never one below its
 *       own last ({@code ts = max(now, last)}); when a millisecond's 4,096
 *       sequence numbers are used it parks until the next one; it waits up to
 *       {@code maxClockWaitMillis} (5 s) for a clock behind the floor or its
 *       last timestamp, then throws {@link ClockBehindException};
 *   <li>while the file is missing, truncated, not JSON, or has a field
 *       missing, negative or not an integer (or a nodeId above 1023) it throws
 *       {@link NotHeldException} naming the path and the reason, and issues
 *       again once a valid file for the same claim is back;
 *   <li>it is safe for concurrent use (its methods are synchronized);
 *   <li>a batch is issued all at once or not at all.
 * </ol>
 *
 * <pre>{@code
 * IdFileGenerator gen = new IdFileGenerator(Path.of("/run/nodeid/id.json"));
 * long id = gen.nextId();
 * long[] ids = gen.nextIds(100);
 * }</pre>
 */
public final class IdFileGenerator implements IdGenerator {

    /** The default re-read period of the file, ms: the broker's grace (3 s) exceeds it. */
    public static final long DEFAULT_REREAD_MILLIS = 1000;
    /** The default longest wait for a clock behind the floor or the last timestamp, ms. */
    public static final long DEFAULT_MAX_CLOCK_WAIT_MILLIS = 5000;

    private final Path path;
    private final LongSupplier clock;
    private final long rereadNanos;
    private final long maxClockWaitNanos;
    private final Mutation mutation;

    // All guarded by this.
    private boolean fresh;       // the last reading is usable and recent enough to keep
    private long readAtNanos;    // System.nanoTime() when the file was last read
    private Claim current;       // the claim the last reading gave, null if none
    private String reason;       // why current is null
    private Claim pinned;        // the first claim used: its nodeId and version are kept
    private String stopped;      // non-null once the version changed: the message
    private long lastMs = Long.MIN_VALUE; // the last timestamp issued
    private int nextSeq;         // the next free sequence number in lastMs

    /**
     * A generator on the id file at path with the default options.
     *
     * @param path the broker's {@code --id-file}
     */
    public IdFileGenerator(Path path) {
        this(path, new Options());
    }

    /**
     * A generator on the id file at path.
     *
     * @param path the broker's {@code --id-file}
     * @param options the clock, periods and testing mutation
     */
    public IdFileGenerator(Path path, Options options) {
        this.path = Objects.requireNonNull(path, "path");
        this.clock = options.clock;
        this.rereadNanos = TimeUnit.MILLISECONDS.toNanos(options.rereadMillis);
        this.maxClockWaitNanos = TimeUnit.MILLISECONDS.toNanos(options.maxClockWaitMillis);
        this.mutation = options.mutation;
    }

    /**
     * Returns the id file's path.
     *
     * @return the path given to the constructor
     */
    public Path path() {
        return path;
    }

    /**
     * Returns the claim IDs would be issued under now, without waiting for the
     * clock: it re-reads the file when due and throws as {@link #nextId()}
     * would for the file and the claim's validUntilMs.
     *
     * @return the claim in use
     * @throws NotHeldException no usable claim now (missing, garbage, expired)
     * @throws VersionChangedException the claim changed: for good
     */
    public synchronized Claim claim() {
        Claim c = usable();
        long now = clock.getAsLong();
        long ts = mutation == Mutation.ALLOW_BACKWARDS ? now : Math.max(now, lastMs);
        if (mutation != Mutation.IGNORE_VALID_UNTIL && ts >= c.validUntilMs()) {
            throw expired(c, ts);
        }
        pin(c);
        return c;
    }

    /**
     * {@inheritDoc}
     *
     * <p>The batch's claim is one every ID of it was issued under: each ID's
     * timestamp is above its floorMs and below its validUntilMs.
     *
     * @throws NotHeldException no usable claim now (missing, garbage, expired)
     * @throws VersionChangedException the claim changed: for good
     * @throws ClockBehindException the clock stayed behind the floor or the
     *     last timestamp for longer than the maximum clock wait
     * @throws NodeIdException interrupted while waiting for the clock, or a
     *     timestamp outside the layout (before 2025, after 2094)
     */
    @Override
    public synchronized Batch nextBatch(int n) {
        IdGenerator.checkCount(n);
        long[] ids = new long[n];
        int got = 0;
        long last = lastMs; // tentative state: kept only if the whole batch is issued
        int seq = nextSeq;
        long waitStart = 0;
        boolean waiting = false;
        while (true) {
            Claim c = usable();
            long now = clock.getAsLong();
            long ts = mutation == Mutation.ALLOW_BACKWARDS ? now : Math.max(now, last);
            int s = ts == last ? seq : 0;
            if (mutation != Mutation.IGNORE_VALID_UNTIL && ts >= c.validUntilMs()) {
                throw expired(c, ts);
            }
            long target; // the millisecond the clock must reach first
            String behind;
            if (mutation != Mutation.IGNORE_FLOOR && ts <= c.floorMs()) {
                target = c.floorMs() + 1;
                behind = "the claim's floorMs " + c.floorMs();
            } else if (s > Snowflake.MAX_SEQ) {
                target = ts + 1;
                behind = "its last timestamp " + ts;
            } else {
                if (ts < Snowflake.EPOCH_MS || ts > Snowflake.MAX_TIME_MS) {
                    throw new NodeIdException("the clock reads " + ts + " ms, outside the layout's " + Snowflake.EPOCH_MS + ".." + Snowflake.MAX_TIME_MS);
                }
                long base = Snowflake.compose(ts, c.nodeId(), 0);
                int k = Math.min(n - got, Snowflake.MAX_SEQ + 1 - s);
                for (int j = 0; j < k; j++) {
                    ids[got++] = base | s++;
                }
                last = ts;
                seq = s;
                waiting = false;
                if (got == n) {
                    lastMs = last;
                    nextSeq = seq;
                    pin(c);
                    return new Batch(ids, c.nodeId(), c.version(), c);
                }
                continue;
            }
            long t = System.nanoTime();
            if (!waiting) {
                waiting = true;
                waitStart = t;
            } else if (t - waitStart >= maxClockWaitNanos) {
                throw new ClockBehindException("the clock (" + now + " ms) stayed behind " + behind + " for "
                        + TimeUnit.NANOSECONDS.toMillis(t - waitStart) + " ms (id file " + path + ")");
            }
            park(target - now);
        }
    }

    /**
     * Parks the thread for a clock gap ms behind: 100 µs when it is a
     * millisecond or less, else the gap less a millisecond, at most 50 ms (the
     * clock may step, the file may change).
     */
    private static void park(long gapMs) {
        long nanos = gapMs <= 1 ? 100_000 : TimeUnit.MILLISECONDS.toNanos(Math.min(gapMs - 1, 50));
        LockSupport.parkNanos(nanos);
        if (Thread.interrupted()) {
            Thread.currentThread().interrupt();
            throw new NodeIdException("interrupted while waiting for the clock");
        }
    }

    /** Keeps c's nodeId and version as the ones this generator uses. */
    private void pin(Claim c) {
        if (pinned == null || mutation == Mutation.IGNORE_VERSION) {
            pinned = c;
        }
    }

    private NotHeldException expired(Claim c, long ts) {
        fresh = false; // re-read on the next call: a renewal may be there
        return new NotHeldException("id file " + path + ": expired: the claim of node " + c.nodeId() + " version "
                + c.version() + " is valid until " + c.validUntilMs() + " ms, the timestamp would be " + ts);
    }

    /**
     * Returns the claim to issue under: re-reads the file when due, and throws
     * once the version changed or while there is no claim.
     */
    private Claim usable() {
        if (stopped != null) {
            throw new VersionChangedException(stopped);
        }
        long t = System.nanoTime();
        if (!fresh || t - readAtNanos >= rereadNanos) {
            read();
            readAtNanos = t;
        }
        Claim c = current;
        if (c == null) {
            throw new NotHeldException("id file " + path + ": " + reason);
        }
        if (pinned != null && !pinned.sameClaim(c) && mutation != Mutation.IGNORE_VERSION) {
            stopped = "id file " + path + " now names node " + c.nodeId() + " version " + c.version()
                    + ", not node " + pinned.nodeId() + " version " + pinned.version()
                    + " that this generator used: stopped for good (a new generator starts from the new claim's floor)";
            throw new VersionChangedException(stopped);
        }
        return c;
    }

    /** Reads the file into current (or reason). */
    private void read() {
        Claim c;
        String why;
        try {
            c = parseClaim(Files.readAllBytes(path));
            why = null;
        } catch (NoSuchFileException e) {
            c = null;
            why = "missing";
        } catch (IOException e) {
            c = null;
            why = "unreadable: " + e;
        } catch (Json.Invalid e) {
            c = null;
            why = e.getMessage();
        }
        if (c == null && mutation == Mutation.IGNORE_MISSING && current != null) {
            return; // the mutation: keep the last claim
        }
        current = c;
        reason = why;
        fresh = c != null;
    }

    /**
     * Parses an id file: a JSON object with the integer fields nodeId
     * (0..1023), version, floorMs and validUntilMs, none negative; other
     * fields are ignored.
     *
     * @throws Json.Invalid with the reason
     */
    static Claim parseClaim(byte[] data) throws Json.Invalid {
        Map<String, Object> m = Json.parseObject(data);
        return new Claim((int) Json.field(m, "nodeId", Snowflake.MAX_NODE_ID), Json.field(m, "version", Long.MAX_VALUE),
                Json.field(m, "floorMs", Long.MAX_VALUE), Json.field(m, "validUntilMs", Long.MAX_VALUE));
    }

    /**
     * The options of an {@link IdFileGenerator}, set fluently:
     * {@code new IdFileGenerator.Options().rereadMillis(500)}. The generator
     * copies them when it is made.
     */
    public static final class Options {
        private LongSupplier clock = System::currentTimeMillis;
        private long rereadMillis = DEFAULT_REREAD_MILLIS;
        private long maxClockWaitMillis = DEFAULT_MAX_CLOCK_WAIT_MILLIS;
        private Mutation mutation = Mutation.NONE;

        /** The defaults: the system's wall clock, 1 s re-reads, 5 s clock wait, no mutation. */
        public Options() {}

        /**
         * Sets the wall clock IDs are stamped with: the host's, which the
         * broker stamps {@code validUntilMs} with (default
         * {@link System#currentTimeMillis()}).
         *
         * @param unixMs returns Unix milliseconds
         * @return this
         */
        public Options clock(LongSupplier unixMs) {
            this.clock = Objects.requireNonNull(unixMs, "clock");
            return this;
        }

        /**
         * Sets how old, on the monotonic clock, a reading of the file may be
         * before it is read again (default 1000; at most the broker's
         * {@code --id-file-grace} less some slack).
         *
         * @param millis 0 or more; 0 reads it on every call
         * @return this
         */
        public Options rereadMillis(long millis) {
            if (millis < 0) {
                throw new IllegalArgumentException("rereadMillis " + millis + " is negative");
            }
            this.rereadMillis = millis;
            return this;
        }

        /**
         * Sets how long a call waits for a clock behind the claim's floor or
         * the last timestamp before it throws {@link ClockBehindException}
         * (default 5000).
         *
         * @param millis 0 or more
         * @return this
         */
        public Options maxClockWaitMillis(long millis) {
            if (millis < 0) {
                throw new IllegalArgumentException("maxClockWaitMillis " + millis + " is negative");
            }
            this.maxClockWaitMillis = millis;
            return this;
        }

        /**
         * Testing only, never in production: makes the generator break one
         * rule on purpose, for the conformance suite to show it catches it.
         * {@code ignore-valid-until} issues past validUntilMs;
         * {@code ignore-floor} issues at or below floorMs;
         * {@code ignore-version} goes on with the new claim after the nodeId
         * or version changes; {@code ignore-missing} goes on with the last
         * claim while the file is missing or unusable;
         * {@code allow-backwards} issues below its own last timestamp when
         * the clock steps back.
         *
         * @param name one of the names above; null or "" for none
         * @return this
         * @throws IllegalArgumentException for another name
         */
        public Options testingMutation(String name) {
            this.mutation = Mutation.parse(name);
            return this;
        }
    }
}
