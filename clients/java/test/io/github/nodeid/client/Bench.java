package io.github.nodeid.client;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

/**
 * Measures IDs per second in one process and one thread: id-file mode
 * ({@code nextId}, {@code nextIds(1000)}) on a temporary id file, and HTTP
 * mode ({@code nextId}, {@code nextIds(1000)}, and {@code nextId} with a
 * prefetch of 10000) against the broker at the URL given as the first
 * argument, if any. Each figure is the best of 3 rounds of
 * 2 s after a 1 s warm-up.
 */
public final class Bench {
    private Bench() {}

    /**
     * Runs the benchmark.
     *
     * @param args [URL]: a broker's base URL for the HTTP figures
     * @throws Exception on a failure to set up
     */
    public static void main(String[] args) throws Exception {
        Path dir = Files.createTempDirectory("nodeid-bench");
        Path file = dir.resolve("id.json");
        long now = System.currentTimeMillis();
        Files.writeString(file, "{\"nodeId\":7,\"version\":3,\"floorMs\":" + (now - 1000) + ",\"validUntilMs\":" + (now + 3_600_000) + "}");
        IdFileGenerator f = new IdFileGenerator(file);
        run("id file nextId()", () -> {
            f.nextId();
            return 1;
        });
        run("id file nextIds(1000)", () -> f.nextIds(1000).length);
        Files.delete(file);
        Files.delete(dir);
        if (args.length > 0) {
            HttpGenerator h = new HttpGenerator(URI.create(args[0]));
            run("HTTP nextId()", () -> {
                h.nextId();
                return 1;
            });
            run("HTTP nextIds(1000)", () -> h.nextIds(1000).length);
            HttpGenerator p = new HttpGenerator(URI.create(args[0]), new HttpGenerator.Options().prefetch(10_000));
            run("HTTP prefetch(10000) nextId()", () -> {
                p.nextId();
                return 1;
            });
        }
    }

    private static void run(String name, IntSupplier call) {
        round(call, 1000);
        double best = 0;
        for (int r = 0; r < 3; r++) {
            best = Math.max(best, round(call, 2000));
        }
        System.out.printf("%-30s %,14.0f IDs/s%n", name, best);
    }

    /** Calls call for ms, returns IDs per second. */
    private static double round(IntSupplier call, long ms) {
        long start = System.nanoTime();
        long end = start + TimeUnit.MILLISECONDS.toNanos(ms);
        long ids = 0;
        long t;
        do {
            for (int k = 0; k < 64; k++) {
                ids += call.getAsInt();
            }
            t = System.nanoTime();
        } while (t - end < 0);
        return ids * 1e9 / (t - start);
    }
}
