package io.github.nodeid.client.conformance;

import io.github.nodeid.client.Batch;
import io.github.nodeid.client.ClockBehindException;
import io.github.nodeid.client.HttpGenerator;
import io.github.nodeid.client.IdFileGenerator;
import io.github.nodeid.client.IdGenerator;
import io.github.nodeid.client.NotHeldException;
import io.github.nodeid.client.UnavailableException;
import io.github.nodeid.client.VersionChangedException;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The conformance driver of the Java client ({@code clients/CONFORMANCE.md}):
 * calls a generator in a loop and writes one line per call to standard
 * output, {@code ok NODE VERSION VALIDUNTILMS ID...} or {@code err KIND
 * MESSAGE}, then {@code done CALLS ERRORS}, and exits 0 when the duration is
 * over, on SIGTERM (or SIGINT), or, without {@code --duration-ms}, when
 * standard input closes. Bad arguments exit 2. Not part of the package's API.
 */
public final class Driver {
    private final PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
    private final CountDownLatch finished = new CountDownLatch(1);
    private volatile boolean stop;
    private volatile Thread loopThread;
    private boolean doneWritten; // guarded by out
    private long calls;
    private long errors;

    private Driver() {}

    /** The parsed arguments. */
    private static final class Args {
        String idFile;
        String url;
        boolean urlEnv;
        int prefetch;
        long prefetchMaxAgeMs = -1; // -1: the package's default; 0: no limit
        int batch = 1;
        long durationMs = -1;
        long pauseMs;
        long[][] clockSteps = new long[0][];
        long rereadMs = IdFileGenerator.DEFAULT_REREAD_MILLIS;
        String mutation;
    }

    /**
     * Runs the driver.
     *
     * @param argv the arguments of {@code clients/CONFORMANCE.md}
     */
    public static void main(String[] argv) {
        Args a;
        IdGenerator gen;
        long start = System.nanoTime();
        try {
            a = parse(argv);
            gen = a.idFile != null
                    ? new IdFileGenerator(Path.of(a.idFile), new IdFileGenerator.Options()
                            .clock(steppedClock(a.clockSteps, start))
                            .rereadMillis(a.rereadMs)
                            .testingMutation(a.mutation))
                    : a.urlEnv ? new HttpGenerator(httpOptions(a)) : new HttpGenerator(URI.create(a.url), httpOptions(a));
        } catch (IllegalArgumentException | IllegalStateException e) {
            System.err.println("driver: " + e.getMessage());
            System.exit(2);
            return;
        }
        new Driver().run(a, gen, start);
    }

    private static HttpGenerator.Options httpOptions(Args a) {
        HttpGenerator.Options o = new HttpGenerator.Options().prefetch(a.prefetch).testingMutation(a.mutation);
        if (a.prefetchMaxAgeMs >= 0) {
            o.prefetchMaxAge(a.prefetchMaxAgeMs == 0 ? null : Duration.ofMillis(a.prefetchMaxAgeMs));
        }
        return o;
    }

    private void run(Args a, IdGenerator gen, long start) {
        loopThread = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopLoop();
            try {
                finished.await(3, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                // write done below anyway
            }
            writeDone();
            Runtime.getRuntime().halt(0); // exit 0, not 143, on SIGTERM
        }, "driver-shutdown"));
        Thread stdin = new Thread(() -> {
            try {
                byte[] buf = new byte[512];
                while (System.in.read(buf) >= 0) {
                    // discard: only the end matters
                }
            } catch (IOException e) {
                // a broken stdin counts as closed
            }
            stopLoop();
        }, "driver-stdin");
        stdin.setDaemon(true);
        if (a.durationMs < 0) { // with a duration a parent may leave stdin at /dev/null
            stdin.start();
        }

        // The duration counts from the first call (making an HttpClient can
        // take a good part of a short one); the clock steps from the start.
        // At its end a call still waiting (for the clock: up to 5 s) is
        // interrupted, and not counted.
        if (a.durationMs >= 0) {
            Thread timer = new Thread(() -> {
                if (sleep(a.durationMs)) {
                    stopLoop();
                }
            }, "driver-duration");
            timer.setDaemon(true);
            timer.start();
        }
        while (!stop) {
            String line;
            boolean failed = false;
            try {
                // nextBatch(1) is nextId() with the claim it was issued under.
                Batch b = gen.nextBatch(a.batch);
                StringBuilder s = new StringBuilder(32 + 20 * b.ids().length).append("ok ").append(b.nodeId()).append(' ').append(b.version())
                        .append(' ').append(b.claim() == null ? "-" : Long.toString(b.claim().validUntilMs()));
                for (long id : b.ids()) {
                    s.append(' ').append(id);
                }
                line = s.toString();
            } catch (RuntimeException e) {
                if (stop) {
                    break; // interrupted by the stop: not a call's outcome
                }
                failed = true;
                line = "err " + kind(e) + " " + String.valueOf(e.getMessage()).replace('\n', ' ').replace('\r', ' ');
            }
            synchronized (out) {
                if (doneWritten) {
                    break;
                }
                calls++;
                if (failed) {
                    errors++;
                }
                out.print(line + "\n");
                out.flush();
            }
            long pause = failed && a.pauseMs == 0 ? 1 : a.pauseMs;
            if (pause > 0 && !sleep(pause)) {
                break;
            }
        }
        writeDone();
        finished.countDown();
        System.exit(0);
    }

    private void stopLoop() {
        stop = true;
        Thread t = loopThread;
        if (t != null && t != Thread.currentThread()) {
            t.interrupt();
        }
    }

    private void writeDone() {
        synchronized (out) {
            if (!doneWritten) {
                doneWritten = true;
                out.print("done " + calls + " " + errors + "\n");
                out.flush();
            }
        }
    }

    /** Sleeps ms; false when interrupted (the stop). */
    private static boolean sleep(long ms) {
        try {
            Thread.sleep(ms);
            return true;
        } catch (InterruptedException e) {
            return false;
        }
    }

    private static String kind(RuntimeException e) {
        if (e instanceof NotHeldException) {
            return "NotHeld";
        }
        if (e instanceof VersionChangedException) {
            return "VersionChanged";
        }
        if (e instanceof ClockBehindException) {
            return "ClockBehind";
        }
        if (e instanceof UnavailableException) {
            return "Unavailable";
        }
        return "Other";
    }

    /**
     * The host's wall clock plus the offset of steps at the time since start
     * (System.nanoTime()): the sum of BY over the steps whose AT has passed.
     */
    private static LongSupplier steppedClock(long[][] steps, long start) {
        if (steps.length == 0) {
            return System::currentTimeMillis;
        }
        return () -> {
            long since = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            long offset = 0;
            for (long[] s : steps) {
                if (s[0] <= since) {
                    offset += s[1];
                }
            }
            return System.currentTimeMillis() + offset;
        };
    }

    private static Args parse(String[] argv) {
        Args a = new Args();
        Set<String> seen = new HashSet<>();
        for (int k = 0; k < argv.length; k++) {
            String arg = argv[k];
            String value = null;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0) {
                value = arg.substring(eq + 1);
                arg = arg.substring(0, eq);
            }
            if (!List.of("--id-file", "--url", "--url-env", "--batch", "--prefetch", "--prefetch-max-age-ms", "--duration-ms", "--pause-ms", "--clock-steps", "--reread-ms", "--mutation").contains(arg)) {
                throw new IllegalArgumentException("unknown argument " + argv[k]);
            }
            if (arg.equals("--url-env")) {
                seen.add(arg);
                a.urlEnv = true;
                continue;
            }
            if (value == null) {
                if (++k == argv.length) {
                    throw new IllegalArgumentException(arg + " needs a value");
                }
                value = argv[k];
            }
            seen.add(arg);
            switch (arg) {
                case "--id-file" -> a.idFile = value;
                case "--url" -> a.url = value;
                case "--prefetch" -> a.prefetch = (int) number(arg, value, 0, IdGenerator.MAX_BATCH);
                case "--prefetch-max-age-ms" -> a.prefetchMaxAgeMs = number(arg, value, 0, Long.MAX_VALUE / 1_000_000);
                case "--batch" -> a.batch = (int) number(arg, value, 1, IdGenerator.MAX_BATCH);
                case "--duration-ms" -> a.durationMs = number(arg, value, 0, Long.MAX_VALUE);
                case "--pause-ms" -> a.pauseMs = number(arg, value, 0, Long.MAX_VALUE);
                case "--clock-steps" -> a.clockSteps = steps(value);
                case "--reread-ms" -> a.rereadMs = number(arg, value, 0, Long.MAX_VALUE);
                default -> a.mutation = value; // --mutation: checked by Options
            }
        }
        if ((a.idFile != null ? 1 : 0) + (a.url != null ? 1 : 0) + (a.urlEnv ? 1 : 0) != 1) {
            throw new IllegalArgumentException("give one of --id-file PATH, --url URL and --url-env");
        }
        if (a.idFile == null && (seen.contains("--clock-steps") || seen.contains("--reread-ms"))) {
            throw new IllegalArgumentException("--clock-steps and --reread-ms are for --id-file, not --url");
        }
        if (a.idFile != null && (seen.contains("--prefetch") || seen.contains("--prefetch-max-age-ms"))) {
            throw new IllegalArgumentException("--prefetch and --prefetch-max-age-ms are for --url and --url-env, not --id-file");
        }
        return a;
    }

    private static long number(String arg, String value, long min, long max) {
        long v;
        try {
            v = Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(arg + " " + value + ": not an integer");
        }
        if (v < min || v > max) {
            throw new IllegalArgumentException(arg + " " + value + ": want " + min + ".." + max);
        }
        return v;
    }

    /** Parses AT:BY,... (AT ms since start, BY signed ms). */
    private static long[][] steps(String spec) {
        List<long[]> l = new ArrayList<>();
        for (String part : spec.split(",", -1)) {
            String[] f = part.trim().split(":", -1);
            if (f.length != 2) {
                throw new IllegalArgumentException("--clock-steps " + spec + ": want AT:BY,... (ms), e.g. 0:-3000,2000:+1500");
            }
            l.add(new long[] {number("--clock-steps AT", f[0].trim(), 0, Long.MAX_VALUE),
                    number("--clock-steps BY", f[1].trim(), Long.MIN_VALUE + 1, Long.MAX_VALUE)});
        }
        return l.toArray(new long[0][]);
    }
}
