package io.github.nodeid.client;

/**
 * Every error of this package: the base class of {@link NotHeldException},
 * {@link VersionChangedException}, {@link ClockBehindException} and
 * {@link UnavailableException}, and itself thrown for any other failure (an
 * I/O error talking to the broker, a broker answer that is not what the
 * protocol says, an interrupted wait). Unchecked.
 */
public class NodeIdException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * An error with a message.
     *
     * @param message what went wrong
     */
    public NodeIdException(String message) {
        super(message);
    }

    /**
     * An error with a message and its cause.
     *
     * @param message what went wrong
     * @param cause the underlying failure
     */
    public NodeIdException(String message, Throwable cause) {
        super(message, cause);
    }
}
