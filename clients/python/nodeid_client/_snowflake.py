"""The project's Snowflake layout: 41 bits of milliseconds since
2025-01-01T00:00:00Z, 10 bits of node ID, 12 bits of sequence."""

from typing import NamedTuple

#: Unix ms of the layout's epoch, 2025-01-01T00:00:00Z.
EPOCH_MS = 1735689600000
#: Bits of the timestamp, node ID and sequence fields.
TIME_BITS, NODE_BITS, SEQ_BITS = 41, 10, 12
#: Number of node IDs (1024) and of sequence numbers per millisecond (4096).
MAX_NODES, SEQ_PER_MS = 1 << NODE_BITS, 1 << SEQ_BITS
#: The last Unix ms the layout can stamp.
MAX_TIME_MS = EPOCH_MS + (1 << TIME_BITS) - 1


class Parts(NamedTuple):
    """The fields of an ID: time_ms in Unix milliseconds, node_id, seq."""

    time_ms: int
    node_id: int
    seq: int


def base(time_ms: int, node_id: int) -> int:
    """Returns the ID with sequence 0 at Unix ms time_ms for node_id."""
    return ((time_ms - EPOCH_MS) << (NODE_BITS + SEQ_BITS)) | (node_id << SEQ_BITS)


def decode(id: int) -> Parts:
    """Splits a Snowflake ID into its Parts; ValueError unless 0 <= id < 2**63."""
    if isinstance(id, bool) or not isinstance(id, int) or not 0 <= id < 1 << 63:
        raise ValueError(f"not a Snowflake ID (an integer from 0 to 2**63-1): {id!r}")
    return Parts((id >> (NODE_BITS + SEQ_BITS)) + EPOCH_MS,
                 (id >> SEQ_BITS) & (MAX_NODES - 1), id & (SEQ_PER_MS - 1))


def check_count(n: int, limit: int = 10000) -> None:
    """Raises TypeError unless n is an int, ValueError unless 1 <= n <= limit."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, not {type(n).__name__}")
    if not 1 <= n <= limit:
        raise ValueError(f"n={n} is out of range: want an integer from 1 to {limit}")
