package io.github.nodeid.client;

/**
 * The IDs of one call and what they were issued under
 * ({@link IdGenerator#nextBatch(int)}).
 *
 * @param ids the IDs, strictly increasing (the array is the caller's)
 * @param nodeId the node ID they carry
 * @param version the version of the claim they were issued under
 * @param claim in id-file mode the claim every ID was issued under: each ID's
 *     timestamp is above its floorMs and below its validUntilMs; null from
 *     {@link HttpGenerator} (the broker fences its IDs itself)
 */
public record Batch(long[] ids, int nodeId, long version, Claim claim) {}
