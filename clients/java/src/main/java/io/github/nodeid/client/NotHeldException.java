package io.github.nodeid.client;

/**
 * No usable node ID now: the id file is missing, truncated, not JSON, has a
 * field missing, negative or not an integer, or its claim is past its
 * {@code validUntilMs}. The message names the file and the reason. Transient:
 * retry later; the generator issues again once a valid file for the same claim
 * is back.
 */
public class NotHeldException extends NodeIdException {
    private static final long serialVersionUID = 1L;

    /**
     * An error with a message.
     *
     * @param message the path and the reason
     */
    public NotHeldException(String message) {
        super(message);
    }
}
