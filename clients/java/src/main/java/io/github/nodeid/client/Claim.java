package io.github.nodeid.client;

/**
 * The content of the broker's id file: a node ID held under a version (the
 * fencing token), the floor to issue timestamps above, and when it stops being
 * usable.
 *
 * @param nodeId the node ID, 0..1023
 * @param version the lease's version; another version is another claim
 * @param floorMs Unix ms: issue only timestamps above it (the predecessor's
 *     last)
 * @param validUntilMs Unix ms on the host's clock: issue only timestamps below
 *     it
 */
public record Claim(int nodeId, long version, long floorMs, long validUntilMs) {

    /**
     * Tells whether other is the same claim: the same node ID and version (its
     * floor and validUntilMs may move).
     *
     * @param other another claim
     * @return whether both name the same node ID and version
     */
    public boolean sameClaim(Claim other) {
        return other != null && nodeId == other.nodeId && version == other.version;
    }
}
