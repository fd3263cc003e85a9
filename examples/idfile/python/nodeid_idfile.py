"""Read the node ID that nodeid-broker writes to its id file (--id-file).

The broker writes
{"nodeId":7,"version":3,"floorMs":1763712330000,"validUntilMs":1763712345678}
atomically once it holds the lease, rewrites it after every renewal with a
later validUntilMs, and removes it the moment it fences itself. An
application that issues IDs itself with the node ID (docs/nodeid-broker.md,
"Sidecar use") must:

- use the node ID only while the file exists with that nodeId and version
  and this host's clock is before validUntilMs: check with every ID or
  batch (IDFile.claim does, and returns None otherwise);
- re-read the file at least every second (IDFile.claim re-reads it when
  its last reading is a second old, or the clock went back);
- stop for good when the version changes: a new version is a new claim,
  whose IDs must not follow on from the old one's;
- issue only timestamps above floorMs (the predecessor's last), and never
  one below its own last: the host's clock may step back after the file was
  written.

validUntilMs is what covers a broker that crashed or froze and so could not
remove the file: the application stops by itself, before another task may
take the node ID.

    ids = IDFile("/nodeid/id.json")
    claim = ids.claim()           # None: no usable node ID now
    ...
    c = ids.claim()
    if c is None or c.version != claim.version:
        stop_issuing()
"""

import json
import time
from dataclasses import dataclass
from typing import Callable, Optional

# REREAD_SECONDS is how old a reading may be before claim() reads the file
# again: the broker's --id-file-grace (3 s) exceeds it with slack.
REREAD_SECONDS = 1.0


@dataclass(frozen=True)
class Claim:
    """The id file's content: the node ID, its version (the fencing token),
    its floor (issue only timestamps above it: Unix ms; 0 from a broker that
    writes none) and when, in Unix ms on this host's clock, it stops being
    usable."""

    node_id: int
    version: int
    valid_until_ms: int
    floor_ms: int = 0


def parse(data: bytes) -> Optional[Claim]:
    """Returns the claim in an id file's bytes, None when they are not one."""
    try:
        doc = json.loads(data)
        node_id, version, until = doc["nodeId"], doc["version"], doc["validUntilMs"]
        floor = doc.get("floorMs", 0)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    for v in (node_id, version, until, floor):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            return None
    return Claim(node_id, version, until, floor)


class IDFile:
    """A reader of the id file at path. clock returns this host's wall clock
    in seconds (time.time), the clock validUntilMs is stamped with."""

    def __init__(self, path: str, reread: float = REREAD_SECONDS,
                 clock: Callable[[], float] = time.time):
        self.path = path
        self.reread = reread
        self.clock = clock
        self._claim: Optional[Claim] = None
        self._read_at: Optional[float] = None

    def claim(self) -> Optional[Claim]:
        """Returns the claim while it may be used: the file (read at most
        REREAD_SECONDS ago) names it and the clock is before its
        validUntilMs. None otherwise: stop issuing IDs."""
        now = self.clock()
        if self._read_at is None or not 0 <= now - self._read_at < self.reread:
            self._claim, self._read_at = self._read(), now
        c = self._claim
        if c is None or now * 1000 >= c.valid_until_ms:
            return None
        return c

    def node_id(self) -> Optional[int]:
        """Returns the node ID while it may be used, else None."""
        c = self.claim()
        return None if c is None else c.node_id

    def _read(self) -> Optional[Claim]:
        try:
            with open(self.path, "rb") as f:
                return parse(f.read())
        except OSError:  # gone: the broker fenced, or has not written it yet
            return None
