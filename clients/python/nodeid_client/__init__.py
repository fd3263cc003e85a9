"""nodeid_client: Snowflake IDs for Python services beside a nodeid-broker.

Two ways, with the same names as the Node.js and Java clients
(clients/README.md):

    from nodeid_client import HttpGenerator, IdFileGenerator, decode

    with HttpGenerator() as gen:       # the safe default; NODEID_URL, the broker's URL
        ids = gen.next_ids(100)
        batch = gen.next_batch(100)    # Batch(ids, node_id, version, claim=None)

    gen = IdFileGenerator("/run/nodeid/id.json")           # no round trip
    one = gen.next_id()
    decode(one)  # Parts(time_ms=..., node_id=7, seq=0)

Every error is a NodeIdError: NotHeldError (retry later), VersionChangedError
(this generator stops for good), ClockBehindError, UnavailableError (a 503).
"""

from ._http import HttpGenerator
from ._idfile import Batch, Claim, IdFileGenerator
from ._snowflake import EPOCH_MS, Parts, decode
from .errors import (ClockBehindError, NodeIdError, NotHeldError,
                     UnavailableError, VersionChangedError)

__all__ = ["HttpGenerator", "IdFileGenerator", "Batch", "Claim", "Parts", "decode", "EPOCH_MS",
           "NodeIdError", "NotHeldError", "VersionChangedError", "ClockBehindError",
           "UnavailableError"]
__version__ = "0.1.0"
