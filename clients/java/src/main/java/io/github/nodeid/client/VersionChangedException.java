package io.github.nodeid.client;

/**
 * The id file names another {@code nodeId} or {@code version} than the first
 * claim the generator used. Final: the generator throws it from every later
 * call; a new generator (normally a new process) starts from the new claim's
 * floor.
 */
public class VersionChangedException extends NodeIdException {
    private static final long serialVersionUID = 1L;

    /**
     * An error with a message.
     *
     * @param message the old and the new claim
     */
    public VersionChangedException(String message) {
        super(message);
    }
}
