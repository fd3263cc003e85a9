package io.github.nodeid.client;

/**
 * A source of Snowflake IDs: {@link IdFileGenerator} (issued in this process
 * under the broker's id file) or {@link HttpGenerator} (issued by the broker).
 * Implementations are safe for concurrent use.
 */
public interface IdGenerator {

    /** The largest batch: the broker's limit on {@code /ids?n=}. */
    int MAX_BATCH = 10_000;

    /**
     * Returns one ID.
     *
     * @return an ID above every ID this generator returned before
     * @throws NodeIdException or one of its subclasses when no ID can be
     *     issued now
     */
    default long nextId() {
        return nextBatch(1).ids()[0];
    }

    /**
     * Returns n IDs, all at once or none.
     *
     * @param n how many, 1..{@value #MAX_BATCH}
     * @return exactly n IDs, strictly increasing
     * @throws IllegalArgumentException for n out of range
     * @throws NodeIdException or one of its subclasses when they cannot be
     *     issued now
     */
    default long[] nextIds(int n) {
        return nextBatch(n).ids();
    }

    /**
     * Returns n IDs, all at once or none, with the claim they were issued
     * under (the conformance driver reports it).
     *
     * @param n how many, 1..{@value #MAX_BATCH}
     * @return exactly n IDs, strictly increasing, and their claim
     * @throws IllegalArgumentException for n out of range
     * @throws NodeIdException or one of its subclasses when they cannot be
     *     issued now
     */
    Batch nextBatch(int n);

    /**
     * Checks a batch size.
     *
     * @param n the size asked for
     * @throws IllegalArgumentException unless 1 &lt;= n &lt;= {@value #MAX_BATCH}
     */
    static void checkCount(int n) {
        if (n < 1 || n > MAX_BATCH) {
            throw new IllegalArgumentException("n=" + n + " is out of range: want 1.." + MAX_BATCH);
        }
    }
}
