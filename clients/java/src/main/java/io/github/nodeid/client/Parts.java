package io.github.nodeid.client;

/**
 * The three fields of a Snowflake ID ({@link Snowflake#decode(long)}).
 *
 * @param timeMs the timestamp, Unix milliseconds
 * @param nodeId the node ID, 0..1023
 * @param seq the sequence number within the millisecond, 0..4095
 */
public record Parts(long timeMs, int nodeId, int seq) {}
