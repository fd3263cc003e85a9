package io.github.nodeid.client;

/**
 * The project's Snowflake layout: 41 bits of milliseconds since
 * {@link #EPOCH_MS} (2025-01-01T00:00:00Z), 10 bits of node ID, 12 bits of
 * sequence, in a positive {@code long}:
 * {@code ((timeMs - EPOCH_MS) << 22) | (nodeId << 12) | seq}.
 */
public final class Snowflake {

    /** The epoch, Unix ms: 2025-01-01T00:00:00Z. */
    public static final long EPOCH_MS = 1_735_689_600_000L;
    /** Bits of milliseconds since the epoch. */
    public static final int TIME_BITS = 41;
    /** Bits of node ID. */
    public static final int NODE_BITS = 10;
    /** Bits of sequence number. */
    public static final int SEQ_BITS = 12;
    /** The largest node ID: 1023. */
    public static final int MAX_NODE_ID = (1 << NODE_BITS) - 1;
    /** The largest sequence number: 4095. */
    public static final int MAX_SEQ = (1 << SEQ_BITS) - 1;
    /** The largest timestamp the layout holds, Unix ms (in 2094). */
    public static final long MAX_TIME_MS = EPOCH_MS + (1L << TIME_BITS) - 1;

    private Snowflake() {}

    /**
     * Builds an ID.
     *
     * @param timeMs Unix ms, {@link #EPOCH_MS}..{@link #MAX_TIME_MS}
     * @param nodeId 0..{@value #MAX_NODE_ID}
     * @param seq 0..{@value #MAX_SEQ}
     * @return the ID
     * @throws IllegalArgumentException for a field out of range
     */
    public static long compose(long timeMs, int nodeId, int seq) {
        if (timeMs < EPOCH_MS || timeMs > MAX_TIME_MS) {
            throw new IllegalArgumentException("time " + timeMs + " is outside the layout's " + EPOCH_MS + ".." + MAX_TIME_MS);
        }
        if (nodeId < 0 || nodeId > MAX_NODE_ID) {
            throw new IllegalArgumentException("node ID " + nodeId + " is out of range 0.." + MAX_NODE_ID);
        }
        if (seq < 0 || seq > MAX_SEQ) {
            throw new IllegalArgumentException("sequence " + seq + " is out of range 0.." + MAX_SEQ);
        }
        return ((timeMs - EPOCH_MS) << (NODE_BITS + SEQ_BITS)) | ((long) nodeId << SEQ_BITS) | seq;
    }

    /**
     * Splits an ID into its fields.
     *
     * @param id an ID (not negative)
     * @return its timestamp (Unix ms), node ID and sequence number
     * @throws IllegalArgumentException for a negative id
     */
    public static Parts decode(long id) {
        if (id < 0) {
            throw new IllegalArgumentException("ID " + id + " is negative");
        }
        return new Parts((id >>> (NODE_BITS + SEQ_BITS)) + EPOCH_MS, (int) (id >>> SEQ_BITS) & MAX_NODE_ID, (int) id & MAX_SEQ);
    }
}
