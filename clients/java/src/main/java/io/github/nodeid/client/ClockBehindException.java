package io.github.nodeid.client;

/**
 * The clock stayed behind the claim's floor, or behind the generator's last
 * timestamp, for longer than the generator's maximum clock wait (5 s by
 * default). Retry later, or look at the host's clock.
 */
public class ClockBehindException extends NodeIdException {
    private static final long serialVersionUID = 1L;

    /**
     * An error with a message.
     *
     * @param message how far behind, and behind what
     */
    public ClockBehindException(String message) {
        super(message);
    }
}
