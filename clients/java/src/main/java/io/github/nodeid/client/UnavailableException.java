package io.github.nodeid.client;

/**
 * The broker answered 503: it holds no valid lease now (starting, fenced,
 * shutting down). Retry after a second (the broker sends
 * {@code Retry-After: 1}).
 */
public class UnavailableException extends NodeIdException {
    private static final long serialVersionUID = 1L;

    /** The broker's reason. */
    private final String reason;

    /**
     * An error with the broker's reason.
     *
     * @param message the whole message, with the URL
     * @param reason the {@code reason} of the broker's answer
     */
    public UnavailableException(String message, String reason) {
        super(message);
        this.reason = reason;
    }

    /**
     * Returns the broker's reason.
     *
     * @return the {@code reason} field of the 503 answer (its raw body when it
     *     was not the JSON the broker sends)
     */
    public String reason() {
        return reason;
    }
}
