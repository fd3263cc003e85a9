package io.github.nodeid.client;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * The Java client's tests, without a framework: {@code main} runs every
 * method whose name starts with {@code test}, prints a line for each and
 * {@code N passed, N failed}, and exits 1 if any failed. With
 * {@code -Dnodeid.test.mutation=NAME} every id-file generator the tests make
 * breaks that rule: some test must then fail ({@code build.sh mutants}).
 */
public final class ClientTest {
    private static final String MUTATION = System.getProperty("nodeid.test.mutation", "");
    /** A time in 2025, Unix ms: the fake clocks start here. */
    private static final long T = Snowflake.EPOCH_MS + 1_000_000_000L;

    private Path dir;
    private Path file;

    /**
     * Runs the tests named in args, or all.
     *
     * @param args test method names to run (none: all)
     * @throws Exception never, in practice
     */
    public static void main(String[] args) throws Exception {
        List<Method> tests = new ArrayList<>();
        for (Method m : ClientTest.class.getDeclaredMethods()) {
            if (m.getName().startsWith("test") && (args.length == 0 || Arrays.asList(args).contains(m.getName()))) {
                tests.add(m);
            }
        }
        tests.sort(Comparator.comparing(Method::getName));
        int passed = 0;
        int failed = 0;
        for (Method m : tests) {
            ClientTest t = new ClientTest();
            t.dir = Files.createTempDirectory("nodeid-test");
            t.file = t.dir.resolve("id.json");
            long start = System.nanoTime();
            try {
                m.invoke(t);
                passed++;
                System.out.printf("ok   %s (%d ms)%n", m.getName(), TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
            } catch (InvocationTargetException e) {
                failed++;
                System.out.printf("FAIL %s: %s%n", m.getName(), e.getCause());
                StackTraceElement[] st = e.getCause().getStackTrace();
                for (int k = 0; k < Math.min(4, st.length); k++) {
                    System.out.println("       at " + st[k]);
                }
            } finally {
                try (var files = Files.list(t.dir)) {
                    for (Path p : (Iterable<Path>) files::iterator) {
                        Files.deleteIfExists(p);
                    }
                }
                Files.deleteIfExists(t.dir);
            }
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }

    // ---- helpers ----

    /** A clock the test sets, counting its reads. */
    static final class FakeClock implements LongSupplier {
        volatile long now;
        final AtomicLong reads = new AtomicLong();

        FakeClock(long now) {
            this.now = now;
        }

        @Override
        public long getAsLong() {
            reads.incrementAndGet();
            return now;
        }
    }

    private IdFileGenerator.Options opts(LongSupplier clock) {
        return new IdFileGenerator.Options().clock(clock).rereadMillis(0).testingMutation(MUTATION);
    }

    /** Writes the id file as the broker does: a temporary file, then a rename. */
    private void write(String content) throws IOException {
        Path tmp = dir.resolve("id.json.tmp");
        Files.writeString(tmp, content);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private void write(int node, long version, long floorMs, long validUntilMs) throws IOException {
        write("{\"nodeId\":" + node + ",\"version\":" + version + ",\"floorMs\":" + floorMs + ",\"validUntilMs\":" + validUntilMs + "}");
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static void eq(long want, long got, String what) {
        if (want != got) {
            throw new AssertionError(what + ": want " + want + ", got " + got);
        }
    }

    static <E extends Throwable> E expect(Class<E> type, Runnable r) {
        try {
            r.run();
        } catch (Throwable e) {
            if (type.isInstance(e)) {
                return type.cast(e);
            }
            throw new AssertionError("want " + type.getSimpleName() + ", got " + e, e);
        }
        throw new AssertionError("want " + type.getSimpleName() + ", got none");
    }

    static void contains(String s, String part) {
        check(s != null && s.contains(part), "\"" + s + "\" does not contain \"" + part + "\"");
    }

    /** Polls cond until it holds, failing after 10 s. */
    static void await(BooleanSupplier cond, String what) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("timed out waiting for " + what);
            }
            LockSupport.parkNanos(200_000);
        }
    }

    /** Checks that call is blocked waiting: it reads the clock again and again without returning. */
    static void awaitWaiting(FakeClock clock, CompletableFuture<?> call) {
        long r0 = clock.reads.get();
        await(() -> clock.reads.get() >= r0 + 3 || call.isDone(), "the call to read the clock");
        check(!call.isDone(), "the call returned instead of waiting: " + call);
    }

    static <V> V result(CompletableFuture<V> f) throws InterruptedException {
        try {
            return f.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new AssertionError(e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("the call did not return in 10 s");
        }
    }

    private static final class LockSupport {
        static void parkNanos(long n) {
            java.util.concurrent.locks.LockSupport.parkNanos(n);
        }
    }

    // ---- the layout ----

    void testSnowflakeLayout() {
        long id = Snowflake.compose(Snowflake.EPOCH_MS + 5, 7, 9);
        eq((5L << 22) | (7 << 12) | 9, id, "compose");
        eq(new Parts(Snowflake.EPOCH_MS + 5, 7, 9).hashCode(), Snowflake.decode(id).hashCode(), "decode");
        check(Snowflake.decode(id).equals(new Parts(Snowflake.EPOCH_MS + 5, 7, 9)), "decode");
        eq(Long.MAX_VALUE, Snowflake.compose(Snowflake.MAX_TIME_MS, 1023, 4095), "the largest ID");
        eq(1735689600000L, Snowflake.EPOCH_MS, "epoch");
        expect(IllegalArgumentException.class, () -> Snowflake.compose(Snowflake.EPOCH_MS - 1, 0, 0));
        expect(IllegalArgumentException.class, () -> Snowflake.compose(T, 1024, 0));
        expect(IllegalArgumentException.class, () -> Snowflake.compose(T, 0, 4096));
        expect(IllegalArgumentException.class, () -> Snowflake.decode(-1));
    }

    // ---- rule 1: a claim, and timestamps below validUntilMs ----

    void testIssuesUnderTheClaim() throws IOException {
        write(7, 3, T - 1000, T + 10_000);
        FakeClock clock = new FakeClock(T);
        IdFileGenerator g = new IdFileGenerator(file, opts(clock));
        long a = g.nextId();
        long[] b = g.nextIds(3);
        eq(Snowflake.compose(T, 7, 0), a, "first ID");
        eq(Snowflake.compose(T, 7, 3), b[2], "third of the batch");
        eq(3, b.length, "batch length");
        Batch batch = g.nextBatch(2);
        check(batch.claim().equals(new Claim(7, 3, T - 1000, T + 10_000)), "the batch's claim: " + batch.claim());
        eq(7, batch.nodeId(), "batch nodeId");
        eq(3, batch.version(), "batch version");
        check(g.claim().equals(new Claim(7, 3, T - 1000, T + 10_000)), "claim()");
        clock.now = T + 5;
        eq(Snowflake.compose(T + 5, 7, 0), g.nextId(), "a new millisecond starts at sequence 0");
    }

    void testExpiredClaim() throws IOException {
        write(7, 3, T - 1000, T + 10);
        FakeClock clock = new FakeClock(T + 9);
        IdFileGenerator g = new IdFileGenerator(file, opts(clock));
        eq(T + 9, Snowflake.decode(g.nextId()).timeMs(), "the last valid millisecond");
        clock.now = T + 10;
        NotHeldException e = expect(NotHeldException.class, g::nextId);
        contains(e.getMessage(), "expired");
        contains(e.getMessage(), file.toString());
        expect(NotHeldException.class, g::claim);
        expect(NotHeldException.class, () -> g.nextIds(5));
        write(7, 3, T - 1000, T + 20); // a renewal
        eq(T + 10, Snowflake.decode(g.nextId()).timeMs(), "after the renewal");
    }

    void testExpiresMidMillisecond() throws Exception {
        // The last valid millisecond runs out of sequence numbers: the next
        // ID would be stamped validUntilMs, so it is refused, not issued.
        write(7, 3, T - 1000, T + 1);
        FakeClock clock = new FakeClock(T);
        IdFileGenerator g = new IdFileGenerator(file, opts(clock));
        eq(4096, g.nextIds(4096).length, "a full millisecond");
        CompletableFuture<Long> next = CompletableFuture.supplyAsync(g::nextId);
        awaitWaiting(clock, next);
        clock.now = T + 1;
        contains(expect(NotHeldException.class, () -> join(next)).getMessage(), "expired");
    }

    // ---- rule 2: re-reads ----

    void testRereadPeriod() throws IOException {
        write(7, 3, T - 1000, T + 10_000);
        FakeClock clock = new FakeClock(T);
        IdFileGenerator cached = new IdFileGenerator(file, opts(clock).rereadMillis(3_600_000));
        IdFileGenerator every = new IdFileGenerator(file, opts(clock).rereadMillis(0));
        IdFileGenerator soon = new IdFileGenerator(file, opts(clock).rereadMillis(20));
        cached.nextId();
        every.nextId();
        soon.nextId();
        Files.delete(file);
        cached.nextId(); // the reading is not an hour old: still used
        contains(expect(NotHeldException.class, every::nextId).getMessage(), "missing");
        await(() -> {
            try {
                soon.nextId();
                return false;
            } catch (NotHeldException e) {
                return true;
            }
        }, "the 20 ms generator to see the file gone");
    }

    // ---- rule 3: another version or node, for good ----

    void testVersionChangeIsForGood() throws IOException {
        write(7, 3, T - 1000, T + 10_000);
        FakeClock clock = new FakeClock(T);
        IdFileGenerator g = new IdFileGenerator(file, opts(clock));
        g.nextId();
        write(7, 4, T - 1000, T + 10_000);
        VersionChangedException e = expect(VersionChangedException.class, g::nextId);
        contains(e.getMessage(), "version 4");
        write(7, 3, T - 1000, T + 10_000); // the old claim back: still stopped
        expect(VersionChangedException.class, g::nextId);
        expect(VersionChangedException.class, () -> g.nextIds(10));
        expect(VersionChangedException.class, g::claim);
        Files.delete(file);
        expect(VersionChangedException.class, g::nextId);
    }

    void testNodeChangeIsForGood() throws IOException {
        write(7, 3, T - 1000, T + 10_000);
        FakeClock clock = new FakeClock(T);
        IdFileGenerator g = new IdFileGenerator(file, opts(clock));
        check(g.claim().nodeId() == 7, "claim"); // claim() uses the claim too
        write(8, 3, T - 1000, T + 10_000);
        contains(expect(VersionChangedException.class, g::nextId).getMessage(), "node 8");
        write(7, 3, T - 1000, T + 10_000);
        expect(VersionChangedException.class, g::nextId);
    }

    void testUnusedClaimDoesNotPin() throws IOException {
        // A claim that issued nothing (expired on first sight) is not "used":
        // the next version is taken.
        write(7, 3, T - 1000, T - 1);
        FakeClock clock = new FakeClock(T);
        IdFileGenerator g = new IdFileGenerator(file, opts(clock));
        expect(NotHeldException.class, g::nextId);
        write(7, 4, T - 1000, T + 1000);
        eq(4, g.nextBatch(1).version(), "version");
    }

    // ---- rule 4: the floor, the last timestamp, the sequence ----

    void testFloor() throws Exception {
        write(7, 3, T, T + 10_000);
        FakeClock clock = new FakeClock(T);
        IdFileGenerator quick = new IdFileGenerator(file, opts(clock).maxClockWaitMillis(30));
        ClockBehindException e = expect(ClockBehindException.class, quick::nextId);
        contains(e.getMessage(), "floorMs " + T);
        clock.now = T - 500;
        expect(ClockBehindException.class, () -> quick.nextIds(3));

        IdFileGenerator g = new IdFileGenerator(file, opts(clock));
        CompletableFuture<Long> next = CompletableFuture.supplyAsync(g::nextId);
        awaitWaiting(clock, next);
        clock.now = T + 1;
        eq(Snowflake.compose(T + 1, 7, 0), result(next), "the first ID above the floor");
    }

    void testClockStepBack() throws Exception {
        write(7, 3, T - 1000, T + 10_000);
        FakeClock clock = new FakeClock(T);
        IdFileGenerator g = new IdFileGenerator(file, opts(clock).maxClockWaitMillis(30));
        long a = g.nextId();
        clock.now = T - 500; // the host's clock steps back
        long b = g.nextId();
        eq(Snowflake.compose(T, 7, 1), b, "the ID after the step back: on the last timestamp");
        check(b > a, "increasing");
        g.nextIds(4094); // the rest of millisecond T
        ClockBehindException e = expect(ClockBehindException.class, g::nextId);
        contains(e.getMessage(), "last timestamp " + T);
        clock.now = T + 1;
        eq(Snowflake.compose(T + 1, 7, 0), g.nextId(), "once the clock is past the last timestamp");
    }

    void testSequenceOverflowWaits() throws Exception {
        write(7, 3, T - 1000, T + 10_000);
        FakeClock clock = new FakeClock(T);
        IdFileGenerator g = new IdFileGenerator(file, opts(clock));
        long[] full = g.nextIds(4096);
        eq(Snowflake.compose(T, 7, 4095), full[4095], "the millisecond's last ID");
        CompletableFuture<Long> next = CompletableFuture.supplyAsync(g::nextId);
        awaitWaiting(clock, next);
        clock.now = T + 1;
        eq(Snowflake.compose(T + 1, 7, 0), result(next), "the ID after the overflow");
    }

    // ---- rule 5: missing, truncated, garbage ----

    void testGarbageFiles() throws IOException {
        String ok = "\"nodeId\":7,\"version\":3,\"floorMs\":1,";
        String[][] cases = {
            {"", "truncated"},
            {"  \n", "truncated"},
            {"{", "truncated"},
            {"{\"nodeId\":7,\"version\":3,\"floorMs\":1", "truncated"},
            {"{\"nodeId\":7,\"version\":3,\"floorMs\":1,\"validUntilMs\":" + (T + 9), "truncated"},
            {"{\"nodeId\":7,\"vers", "truncated"},
            {"hello", "not JSON"},
            {"{nodeId:7}", "not JSON"},
            {"{\"nodeId\":7,}", "not JSON"},
            {"[7,3,1,2]", "not a JSON object"},
            {"7", "not a JSON object"},
            {"{" + ok + "\"validUntilMs\":" + (T + 9) + "}x", "trailing"},
            {"{" + ok + "\"validUntilMs\":" + (T + 9) + "}{}", "trailing"},
            {"{\"version\":3,\"floorMs\":1,\"validUntilMs\":" + (T + 9) + "}", "nodeId missing"},
            {"{\"nodeId\":7,\"floorMs\":1,\"validUntilMs\":" + (T + 9) + "}", "version missing"},
            {"{\"nodeId\":7,\"version\":3,\"validUntilMs\":" + (T + 9) + "}", "floorMs missing"},
            {"{" + ok.substring(0, ok.length() - 1) + "}", "validUntilMs missing"},
            {"{" + ok + "\"validUntilMs\":-5}", "negative"},
            {"{\"nodeId\":-1,\"version\":3,\"floorMs\":1,\"validUntilMs\":9}", "negative"},
            {"{\"nodeId\":7.0,\"version\":3,\"floorMs\":1,\"validUntilMs\":9}", "not an integer"},
            {"{\"nodeId\":7,\"version\":3,\"floorMs\":1e3,\"validUntilMs\":9}", "not an integer"},
            {"{\"nodeId\":\"7\",\"version\":3,\"floorMs\":1,\"validUntilMs\":9}", "not an integer"},
            {"{\"nodeId\":7,\"version\":null,\"floorMs\":1,\"validUntilMs\":9}", "not an integer"},
            {"{\"nodeId\":7,\"version\":true,\"floorMs\":1,\"validUntilMs\":9}", "not an integer"},
            {"{\"nodeId\":7,\"version\":[3],\"floorMs\":1,\"validUntilMs\":9}", "not an integer"},
            {"{\"nodeId\":1024,\"version\":3,\"floorMs\":1,\"validUntilMs\":9}", "above 1023"},
            {"{\"nodeId\":7,\"version\":99999999999999999999,\"floorMs\":1,\"validUntilMs\":9}", "out of range"},
            {"{\"nodeId\":07,\"version\":3,\"floorMs\":1,\"validUntilMs\":9}", "not JSON"},
            {"{\"nodeId\":7,\"nodeId\":8,\"version\":3,\"floorMs\":1,\"validUntilMs\":9}", "repeated"},
            {"\uFEFF{" + ok + "\"validUntilMs\":" + (T + 9) + "}", "not JSON"},
        };
        FakeClock clock = new FakeClock(T);
        IdFileGenerator g = new IdFileGenerator(file, opts(clock));
        contains(expect(NotHeldException.class, g::nextId).getMessage(), file + ": missing");
        for (String[] c : cases) {
            write(c[0]);
            NotHeldException e = expect(NotHeldException.class, g::nextId);
            contains(e.getMessage(), file.toString());
            contains(e.getMessage(), c[1]);
            expect(NotHeldException.class, g::claim);
        }
        Files.write(file, new byte[] {'{', (byte) 0xff, '}'});
        contains(expect(NotHeldException.class, g::nextId).getMessage(), "not UTF-8");
        // Whitespace and fields of a later broker are fine.
        write(" {\"nodeId\" : 7, \"version\":3,\"floorMs\":1,\"validUntilMs\":" + (T + 9) + ",\"extra\":{\"a\":[1.5,\"\\u00e9\"]}}\n");
        eq(7, Snowflake.decode(g.nextId()).nodeId(), "node ID");
    }

    void testResumesWhenTheFileReturns() throws IOException {
        write(7, 3, T - 1000, T + 10_000);
        FakeClock clock = new FakeClock(T);
        IdFileGenerator g = new IdFileGenerator(file, opts(clock));
        long a = g.nextId();
        Files.delete(file);
        contains(expect(NotHeldException.class, g::nextId).getMessage(), "missing");
        expect(NotHeldException.class, g::claim);
        write("{\"nodeId\":7,\"ver");
        contains(expect(NotHeldException.class, g::nextId).getMessage(), "truncated");
        write(7, 3, T - 1000, T + 20_000); // renewed meanwhile
        long b = g.nextId();
        check(b > a, "increasing after the file returned");
        eq(T + 20_000, g.claim().validUntilMs(), "the renewed claim");
    }

    // ---- rule 6: threads ----

    void testThreadsNoDuplicates() throws Exception {
        long now = System.currentTimeMillis();
        write(7, 3, now - 1000, now + 3_600_000);
        IdFileGenerator g = new IdFileGenerator(file, new IdFileGenerator.Options().testingMutation(MUTATION));
        int threads = 8;
        int perThread = 40_000;
        long[][] got = new long[threads][perThread];
        CountDownLatch go = new CountDownLatch(1);
        List<CompletableFuture<Void>> fs = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long[] mine = got[t];
            boolean batches = t % 2 == 0;
            fs.add(CompletableFuture.runAsync(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
                for (int k = 0; k < perThread; ) {
                    if (batches) {
                        long[] b = g.nextIds(100);
                        System.arraycopy(b, 0, mine, k, 100);
                        k += 100;
                    } else {
                        mine[k++] = g.nextId();
                    }
                }
            }, java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
                Thread th = new Thread(r);
                th.setDaemon(true);
                return th;
            })));
        }
        go.countDown();
        for (CompletableFuture<Void> f : fs) {
            result(f);
        }
        Set<Long> all = new HashSet<>();
        for (long[] mine : got) {
            for (int k = 0; k < mine.length; k++) {
                check(k == 0 || mine[k] > mine[k - 1], "one thread's IDs increase");
                check(all.add(mine[k]), "duplicate " + mine[k]);
            }
        }
        eq((long) threads * perThread, all.size(), "distinct IDs");
    }

    // ---- rule 7: batches ----

    void testBatchSizes() throws IOException {
        long now = System.currentTimeMillis();
        write(7, 3, now - 1000, now + 3_600_000);
        IdFileGenerator g = new IdFileGenerator(file, new IdFileGenerator.Options().testingMutation(MUTATION));
        for (int n : new int[] {1, 2, 4095, 4096, 4097, 10_000}) {
            long[] ids = g.nextIds(n);
            eq(n, ids.length, "batch length");
            for (int k = 1; k < n; k++) {
                check(ids[k] > ids[k - 1], "a batch increases");
            }
        }
        expect(IllegalArgumentException.class, () -> g.nextIds(0));
        expect(IllegalArgumentException.class, () -> g.nextIds(10_001));
    }

    void testBatchAllOrNothing() throws Exception {
        write(7, 3, T - 1000, T + 10_000);
        FakeClock clock = new FakeClock(T);
        IdFileGenerator g = new IdFileGenerator(file, opts(clock));
        // 5000 IDs need two milliseconds: the call waits for the next, and the
        // file goes meanwhile.
        CompletableFuture<long[]> gone = CompletableFuture.supplyAsync(() -> g.nextIds(5000));
        awaitWaiting(clock, gone);
        Files.delete(file);
        expect(NotHeldException.class, () -> join(gone));
        write(7, 3, T - 1000, T + 1);
        eq(Snowflake.compose(T, 7, 0), g.nextId(), "nothing of the failed batch was issued");
        // A batch that would reach validUntilMs fails whole.
        CompletableFuture<long[]> expires = CompletableFuture.supplyAsync(() -> g.nextIds(4096)); // T has 4095 left
        awaitWaiting(clock, expires);
        clock.now = T + 1;
        contains(expect(NotHeldException.class, () -> join(expires)).getMessage(), "expired");
        write(7, 3, T - 1000, T + 10);
        eq(Snowflake.compose(T + 1, 7, 0), g.nextId(), "nothing of the expired batch was issued");
        // A batch that waits too long for the clock fails whole.
        IdFileGenerator quick = new IdFileGenerator(file, opts(clock).maxClockWaitMillis(20));
        expect(ClockBehindException.class, () -> quick.nextIds(5000)); // the clock stays at T + 1
        eq(Snowflake.compose(T + 1, 7, 0), quick.nextId(), "nothing of the batch that waited too long was issued");
    }

    static <V> V join(CompletableFuture<V> f) {
        try {
            return result(f);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    // ---- the testing mutations ----

    void testMutationNames() throws IOException {
        for (String name : new String[] {"", "ignore-valid-until", "ignore-floor", "ignore-version", "ignore-missing", "allow-backwards"}) {
            new IdFileGenerator.Options().testingMutation(name);
        }
        new IdFileGenerator.Options().testingMutation(null);
        expect(IllegalArgumentException.class, () -> new IdFileGenerator.Options().testingMutation("ignore-everything"));
        // Each breaks its rule (checked here directly, whatever MUTATION is).
        write(7, 3, T, T + 10);
        FakeClock clock = new FakeClock(T + 10);
        IdFileGenerator past = new IdFileGenerator(file, new IdFileGenerator.Options().clock(clock).rereadMillis(0).testingMutation("ignore-valid-until"));
        eq(T + 10, Snowflake.decode(past.nextId()).timeMs(), "ignore-valid-until issues at validUntilMs");
        clock.now = T;
        IdFileGenerator floor = new IdFileGenerator(file, new IdFileGenerator.Options().clock(clock).rereadMillis(0).testingMutation("ignore-floor"));
        eq(T, Snowflake.decode(floor.nextId()).timeMs(), "ignore-floor issues at floorMs");
    }

    // ---- the driver ----

    private Process driver(String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), "io.github.nodeid.client.conformance.Driver"));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).start();
    }

    private static String readAll(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        in.transferTo(b);
        return b.toString(StandardCharsets.UTF_8);
    }

    void testDriverBadArguments() throws Exception {
        for (String[] args : new String[][] {{}, {"--bogus"}, {"--id-file"}, {"--id-file", "x", "--url", "http://a"},
                {"--id-file", "x", "--mutation", "nope"}, {"--id-file", "x", "--batch", "0"}, {"--id-file", "x", "--clock-steps", "5"}}) {
            Process p = driver(args);
            p.getOutputStream().close();
            String err = readAll(p.getErrorStream());
            eq(2, p.waitFor(), "exit code of " + Arrays.toString(args));
            check(err.startsWith("driver: "), "the reason on stderr: " + err);
        }
    }

    void testDriverDurationAndOutput() throws Exception {
        long now = System.currentTimeMillis();
        write(7, 3, now - 1000, now + 3_600_000);
        Process p = driver("--id-file", file.toString(), "--batch", "3", "--duration-ms", "300", "--pause-ms", "10");
        p.getOutputStream().close(); // with a duration, stdin is not watched
        String out = readAll(p.getInputStream());
        eq(0, p.waitFor(), "exit code");
        eq(0, readAll(p.getErrorStream()).length(), "stderr length");
        String[] lines = out.split("\n");
        check(lines.length >= 2, "lines: " + out);
        String[] ok = lines[0].split(" ");
        check(ok[0].equals("ok") && ok[1].equals("7") && ok[2].equals("3") && ok[3].equals(Long.toString(now + 3_600_000)) && ok.length == 7, "ok line: " + lines[0]);
        eq(lines.length - 1, Long.parseLong(lines[lines.length - 1].split(" ")[1]), "done CALLS: " + lines[lines.length - 1]);
        check(lines[lines.length - 1].matches("done \\d+ 0"), "done line: " + lines[lines.length - 1]);

        // A call waiting for the clock (behind the floor: up to 5 s) is cut
        // short at the end of the duration, and not counted.
        write(7, 3, now + 60_000, now + 3_600_000);
        long start = System.nanoTime();
        Process w = driver("--id-file", file.toString(), "--duration-ms", "200");
        eq(0, w.waitFor(), "exit code");
        check(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(4), "the driver stopped before the 5 s clock wait");
        eq(0, readAll(w.getInputStream()).compareTo("done 0 0\n"), "the waiting call is not counted");
    }

    void testDriverStopsOnStdinCloseAndSigterm() throws Exception {
        Process p = driver("--id-file", file.toString(), "--pause-ms", "5"); // no file: err lines
        await(() -> {
            try {
                return p.getInputStream().available() > 0;
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        }, "a first line");
        p.getOutputStream().close();
        String out = readAll(p.getInputStream());
        eq(0, p.waitFor(), "exit code after stdin closed");
        check(out.startsWith("err NotHeld id file " + file + ": missing"), "err line: " + out);
        check(out.endsWith("\n") && out.lines().reduce((x, y) -> y).orElse("").matches("done (\\d+) \\1"), "done line: " + out);

        long now = System.currentTimeMillis();
        write(7, 3, now - 1000, now + 3_600_000);
        Process q = driver("--id-file", file.toString(), "--pause-ms", "1");
        await(() -> {
            try {
                return q.getInputStream().available() > 0;
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        }, "a first line");
        q.toHandle().destroy(); // SIGTERM (Process.destroy would close the streams)
        String out2 = readAll(q.getInputStream());
        eq(0, q.waitFor(), "exit code after SIGTERM");
        check(out2.lines().reduce((x, y) -> y).orElse("").matches("done \\d+ 0"), "done line: " + out2);
    }

    // ---- HTTP ----

    /** A fake broker: answers /ids with what answer returns for n. */
    private interface Answer {
        Object[] reply(int n); // {status, body}
    }

    private HttpServer server(Answer answer) throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        s.createContext("/", ex -> {
            String q = ex.getRequestURI().getRawQuery();
            int n = ex.getRequestURI().getPath().equals("/ids") && q != null && q.startsWith("n=") ? Integer.parseInt(q.substring(2)) : -1;
            Object[] r = answer.reply(n);
            byte[] body = ((String) r[1]).getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "application/json");
            ex.sendResponseHeaders((Integer) r[0], body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        s.setExecutor(java.util.concurrent.Executors.newFixedThreadPool(4, r -> {
            Thread th = new Thread(r);
            th.setDaemon(true);
            return th;
        }));
        s.start();
        return s;
    }

    /** A generator with long timeouts: the tests run on loaded machines too. */
    private static HttpGenerator patient(URI base) {
        new HttpGenerator(base); // the default timeouts are 2 s
        return new HttpGenerator(base, Duration.ofSeconds(30), Duration.ofSeconds(30));
    }

    private static URI base(HttpServer s) {
        return URI.create("http://127.0.0.1:" + s.getAddress().getPort());
    }

    private static String idsBody(int n, AtomicLong next) {
        StringBuilder b = new StringBuilder("{\"nodeId\":5,\"version\":9,\"ids\":[");
        for (int k = 0; k < n; k++) {
            long i = next.getAndIncrement();
            b.append(k == 0 ? "\"" : ",\"").append(Snowflake.compose(T + i / 4096, 5, (int) (i % 4096))).append('"');
        }
        return b.append("],\"recoveries\":1}\n").toString();
    }

    void testHttpIds() throws Exception {
        AtomicLong next = new AtomicLong();
        HttpServer s = server(n -> new Object[] {200, idsBody(n, next)});
        try {
            HttpGenerator g = patient(URI.create(base(s) + "/"));
            eq(Snowflake.compose(T, 5, 0), g.nextId(), "one ID");
            long[] ids = g.nextIds(3);
            eq(3, ids.length, "batch");
            eq(Snowflake.compose(T, 5, 3), ids[2], "third ID");
            Batch b = g.nextBatch(2);
            check(b.nodeId() == 5 && b.version() == 9 && b.claim() == null, "batch: " + b);
            eq(10_000, g.nextIds(10_000).length, "the largest batch");
            expect(IllegalArgumentException.class, () -> g.nextIds(0));
            expect(IllegalArgumentException.class, () -> g.nextIds(10_001));
            // Threads share one generator.
            List<CompletableFuture<long[]>> fs = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                fs.add(CompletableFuture.supplyAsync(() -> {
                    long[] all = new long[500];
                    for (int k = 0; k < 50; k++) {
                        System.arraycopy(g.nextIds(10), 0, all, k * 10, 10);
                    }
                    return all;
                }));
            }
            Set<Long> seen = new HashSet<>();
            for (CompletableFuture<long[]> f : fs) {
                for (long id : result(f)) {
                    check(seen.add(id), "duplicate " + id);
                }
            }
        } finally {
            s.stop(0);
        }
    }

    void testHttpErrors() throws Exception {
        AtomicReference<Object[]> reply = new AtomicReference<>();
        HttpServer s = server(n -> reply.get());
        try {
            HttpGenerator g = patient(base(s));
            reply.set(new Object[] {503, "{\"status\":\"unavailable\",\"reason\":\"nodeid: fenced: lease lost\"}\n"});
            UnavailableException u = expect(UnavailableException.class, g::nextId);
            eq(0, u.reason().compareTo("nodeid: fenced: lease lost"), "reason: " + u.reason());
            contains(u.getMessage(), "fenced");
            reply.set(new Object[] {503, "busy"});
            eq(0, expect(UnavailableException.class, g::nextId).reason().compareTo("busy"), "raw reason");
            reply.set(new Object[] {400, "{\"status\":\"bad_request\",\"reason\":\"n=0 is out of range\"}"});
            NodeIdException e = expect(NodeIdException.class, g::nextId);
            check(!(e instanceof UnavailableException), "400 is not Unavailable");
            contains(e.getMessage(), "HTTP 400");
            contains(e.getMessage(), "out of range");
            String[] bad = {
                "{\"nodeId\":5,\"version\":9,\"ids\":[\"1\",\"2\"]}", // 2 IDs for 1
                "{\"nodeId\":5,\"version\":9,\"ids\":[1]}",           // not a string
                "{\"nodeId\":5,\"version\":9}",                       // no ids
                "{\"nodeId\":5,\"version\":9,\"ids\":[\"12a\"]}",
                "{\"nodeId\":5,\"version\":9,\"ids\":[\"" + Snowflake.compose(T, 6, 0) + "\"]}", // another node
                "{\"nodeId\":5,\"version\":-9,\"ids\":[\"" + Snowflake.compose(T, 5, 0) + "\"]}",
                "{\"nodeId\":5,\"version\":9,\"ids\":[\"" + Snowflake.compose(T, 5, 0) + "\"]",   // truncated
                "<html>",
            };
            for (String body : bad) {
                reply.set(new Object[] {200, body});
                NodeIdException b = expect(NodeIdException.class, g::nextId);
                check(b.getClass() == NodeIdException.class, "a bad answer is a plain NodeIdException: " + b);
                contains(b.getMessage(), "bad answer");
            }
            reply.set(new Object[] {200, "{\"nodeId\":5,\"version\":9,\"ids\":[\"" + Snowflake.compose(T, 5, 1) + "\",\"" + Snowflake.compose(T, 5, 0) + "\"]}"});
            contains(expect(NodeIdException.class, () -> g.nextIds(2)).getMessage(), "not increasing");
        } finally {
            s.stop(0);
        }
    }

    void testHttpConnectionFailures() throws Exception {
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        HttpGenerator refused = new HttpGenerator(URI.create("http://127.0.0.1:" + port));
        NodeIdException e = expect(NodeIdException.class, refused::nextId);
        check(e.getCause() instanceof IOException, "cause: " + e.getCause());

        CountDownLatch release = new CountDownLatch(1);
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        s.createContext("/", ex -> {
            try {
                release.await(); // never answers before the client gives up
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
            }
            ex.close();
        });
        s.setExecutor(java.util.concurrent.Executors.newCachedThreadPool(r -> {
            Thread th = new Thread(r);
            th.setDaemon(true);
            return th;
        }));
        s.start();
        try {
            HttpGenerator slow = new HttpGenerator(base(s), Duration.ofSeconds(2), Duration.ofMillis(100));
            NodeIdException t = expect(NodeIdException.class, slow::nextId);
            check(t.getCause() instanceof HttpTimeoutException, "cause: " + t.getCause());
        } finally {
            release.countDown();
            s.stop(0);
        }
        expect(IllegalArgumentException.class, () -> new HttpGenerator(URI.create("ftp://127.0.0.1")));
        expect(IllegalArgumentException.class, () -> new HttpGenerator(URI.create("http://127.0.0.1:1/?a=b")));
    }

    void testHttpBaseOrIdsURL() throws Exception {
        AtomicLong next = new AtomicLong();
        List<String> paths = java.util.Collections.synchronizedList(new ArrayList<>());
        HttpServer s = server(n -> new Object[] {200, idsBody(n, next)});
        s.createContext("/x/", ex -> {
            paths.add(ex.getRequestURI().getPath());
            ex.sendResponseHeaders(404, -1);
            ex.close();
        });
        try {
            for (String u : new String[] {"", "/", "/ids", "/ids/"}) {
                eq(1, new HttpGenerator(URI.create(base(s) + u)).nextIds(1).length, "URL " + u);
            }
            expect(NodeIdException.class, () -> new HttpGenerator(URI.create(base(s) + "/x/ids")).nextId());
            check(paths.equals(List.of("/x/ids")), "the /ids of a base with a path: " + paths);
            if (System.getenv(HttpGenerator.URL_VARIABLE) == null) {
                contains(expect(IllegalStateException.class, HttpGenerator::new).getMessage(), "NODEID_URL is not set");
            }
        } finally {
            s.stop(0);
        }
    }

    void testHttpPrefetch() throws Exception {
        FakeClock frozen = new FakeClock(0); // the monotonic clock: no batch ages
        AtomicLong next = new AtomicLong();
        AtomicLong version = new AtomicLong(9);
        AtomicInteger status = new AtomicInteger(200);
        List<Integer> asked = java.util.Collections.synchronizedList(new ArrayList<>());
        HttpServer s = server(n -> {
            asked.add(n);
            return status.get() == 200 ? new Object[] {200, idsBody(n, next).replace("\"version\":9", "\"version\":" + version.get())}
                    : new Object[] {503, "{\"reason\":\"fenced\"}"};
        });
        try {
            HttpGenerator g = new HttpGenerator(base(s), new HttpGenerator.Options().prefetch(10).nanoClock(frozen)
                    .connectTimeout(Duration.ofSeconds(30)).requestTimeout(Duration.ofSeconds(30)));
            Batch a = g.nextBatch(4);
            version.set(10); // the next answer's
            Batch b = g.nextBatch(4); // 8 used: the next one is fetched
            check(a.version() == 9 && b.version() == 9 && b.ids()[0] == a.ids()[3] + 1, "one answer: " + a + " " + b);
            Batch c = g.nextBatch(4); // 2 left: skipped
            check(c.version() == 10 && c.nodeId() == 5 && c.claim() == null, "the next answer's version: " + c);
            eq(Snowflake.compose(T, 5, 10), c.ids()[0], "the next answer's first ID");
            check(asked.equals(List.of(10, 10)), "one request per 10 IDs: " + asked);
            eq(20, g.nextIds(20).length, "more than the prefetch: one answer");
            // What is left stays good when the broker fails; then its error.
            HttpGenerator h = new HttpGenerator(base(s), new HttpGenerator.Options().prefetch(4).nanoClock(frozen)
                    .connectTimeout(Duration.ofSeconds(30)).requestTimeout(Duration.ofSeconds(30)));
            long first = h.nextId();
            status.set(503);
            eq(first + 1, h.nextId(), "2 used: the fetch ahead fails");
            eq(first + 2, h.nextId(), "third");
            eq(first + 3, h.nextId(), "fourth");
            expect(UnavailableException.class, h::nextId);
            status.set(200);
            check(h.nextId() > first + 3, "after the broker is back");
            // Threads share the batches.
            HttpGenerator shared = new HttpGenerator(base(s), new HttpGenerator.Options().prefetch(100).nanoClock(frozen)
                    .connectTimeout(Duration.ofSeconds(30)).requestTimeout(Duration.ofSeconds(30)));
            List<CompletableFuture<long[]>> fs = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                fs.add(CompletableFuture.supplyAsync(() -> {
                    long[] all = new long[400];
                    for (int k = 0; k < 100; k++) {
                        all[k * 4] = shared.nextId();
                        System.arraycopy(shared.nextIds(3), 0, all, k * 4 + 1, 3);
                    }
                    return all;
                }));
            }
            Set<Long> seen = new HashSet<>();
            for (CompletableFuture<long[]> f : fs) {
                long last = -1;
                for (long id : result(f)) {
                    check(seen.add(id), "duplicate " + id);
                    check(id > last, "not increasing in a thread: " + id);
                    last = id;
                }
            }
            expect(IllegalArgumentException.class, () -> new HttpGenerator.Options().prefetch(10_001));
            expect(IllegalArgumentException.class, () -> new HttpGenerator.Options().testingMutation("ignore-floor"));
        } finally {
            s.stop(0);
        }
    }

    private static HttpGenerator.Options patientPrefetch(int p, FakeClock mono) {
        return new HttpGenerator.Options().prefetch(p).nanoClock(mono)
                .connectTimeout(Duration.ofSeconds(30)).requestTimeout(Duration.ofSeconds(30));
    }

    void testHttpPrefetchMaxAge() throws Exception {
        AtomicLong next = new AtomicLong();
        List<Integer> asked = java.util.Collections.synchronizedList(new ArrayList<>());
        AtomicBoolean hold = new AtomicBoolean(); // answer the next request once released
        CountDownLatch release = new CountDownLatch(1);
        HttpServer s = server(n -> {
            asked.add(n);
            if (hold.getAndSet(false)) {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return new Object[] {200, idsBody(n, next)};
        });
        final long ms = 1_000_000L;
        try {
            // The default, 1 s: a batch that old is used, an older one skipped.
            FakeClock mono = new FakeClock(-5 * ms); // ns, any value
            HttpGenerator g = new HttpGenerator(base(s), patientPrefetch(10, mono));
            eq(Snowflake.compose(T, 5, 0), g.nextId(), "the first ID");
            mono.now += 1000 * ms;
            eq(Snowflake.compose(T, 5, 1), g.nextId(), "as old as the max age: used");
            mono.now += 1;
            eq(Snowflake.compose(T, 5, 10), g.nextId(), "older: from a new fetch");
            check(asked.equals(List.of(10, 10)), "a second fetch: " + asked);
            eq(Snowflake.compose(T, 5, 11), g.nextIds(2)[0], "the new batch in use");
            eq(2, asked.size(), "no more fetches");

            // A batch fetched ahead too long ago is skipped too.
            asked.clear();
            next.set(0);
            HttpGenerator h = new HttpGenerator(base(s), patientPrefetch(10, mono).prefetchMaxAge(Duration.ofMillis(500)));
            eq(Snowflake.compose(T, 5, 0), h.nextIds(5)[0], "half: the next batch fetched ahead");
            await(() -> asked.size() >= 2, "the fetch ahead");
            mono.now += 500 * ms;
            eq(Snowflake.compose(T, 5, 5), h.nextIds(5)[0], "the rest of the first");
            eq(Snowflake.compose(T, 5, 10), h.nextIds(5)[0], "the batch fetched ahead: young enough");
            // The next fetched ahead, 500 ms later: the fake broker has issued
            // its IDs (whether its answer is in yet or not, it is too old below).
            await(() -> asked.size() >= 3, "the next fetch ahead");
            mono.now += 600 * ms;
            eq(Snowflake.compose(T, 5, 30), h.nextId(), "both batches too old: from a new fetch");
            eq(4, asked.size(), "fetches");

            // A fetch under way that was sent too long ago is not waited for.
            asked.clear();
            next.set(0);
            HttpGenerator w = new HttpGenerator(base(s), patientPrefetch(10, mono).requestTimeout(Duration.ofSeconds(5)));
            eq(Snowflake.compose(T, 5, 0), w.nextIds(4)[0], "the first batch");
            hold.set(true);
            eq(Snowflake.compose(T, 5, 4), w.nextId(), "half: the fetch ahead, which hangs");
            await(() -> asked.size() >= 2, "the fetch ahead");
            mono.now += 1500 * ms;
            eq(Snowflake.compose(T, 5, 10), w.nextId(), "from a new fetch, not the one sent 1.5 s ago");
            eq(3, asked.size(), "fetches");
            release.countDown();
            await(() -> next.get() >= 30, "the hung fetch's answer");

            // No limit (null): the old behaviour.
            asked.clear();
            next.set(0);
            HttpGenerator u = new HttpGenerator(base(s), patientPrefetch(10, mono).prefetchMaxAge(null));
            eq(Snowflake.compose(T, 5, 0), u.nextId(), "the first ID");
            mono.now += 86_400_000 * ms;
            eq(Snowflake.compose(T, 5, 1), u.nextIds(4)[0], "a day later: the same batch");
            await(() -> asked.size() >= 2, "the fetch ahead");
            mono.now += 86_400_000 * ms;
            eq(Snowflake.compose(T, 5, 10), u.nextIds(6)[0], "5 left of the first: skipped");
            eq(2, asked.size(), "fetches");

            for (Duration bad : new Duration[] {Duration.ZERO, Duration.ofMillis(-1), Duration.ofSeconds(Long.MAX_VALUE)}) {
                expect(IllegalArgumentException.class, () -> new HttpGenerator.Options().prefetchMaxAge(bad));
            }
        } finally {
            s.stop(0);
        }
    }
}
