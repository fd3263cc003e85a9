"""The errors of nodeid_client: every one is a NodeIdError."""


class NodeIdError(Exception):
    """The base of every error the package raises for a failed ID request."""


class NotHeldError(NodeIdError):
    """No usable node ID now: the id file is missing, truncated or garbage, or
    its claim has expired (validUntilMs). Transient: retry later; the
    generator issues again once a valid file for the same claim is back."""


class VersionChangedError(NodeIdError):
    """The id file names another nodeId or version than the claim this
    generator first used. Final: this generator raises it on every later call;
    a new generator (a new process) starts from the new claim's floor."""


class ClockBehindError(NodeIdError):
    """The clock stayed behind the claim's floor or the generator's last
    timestamp for longer than max_clock_wait."""


class UnavailableError(NodeIdError):
    """The broker answered 503: it holds no valid lease now. Retry after
    retry_after seconds (its Retry-After header, 1 when absent)."""

    def __init__(self, message: str, retry_after: float = 1.0):
        super().__init__(message)
        #: Seconds the broker asked to wait before retrying.
        self.retry_after = retry_after
