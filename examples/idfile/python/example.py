"""An application that nodeid-broker run supervises, reading its node ID with
nodeid_idfile as it would before issuing IDs:

    nodeid-broker run --id-file /run/nodeid/id.json -- python3 example.py

It prints the claim and exits 0 when the id file names the node ID and
version the broker gave in the environment, else 1.
"""

import os
import sys
import time

from nodeid_idfile import IDFile


def main() -> int:
    ids = IDFile(os.environ["NODEID_ID_FILE"])
    claim = ids.claim()  # the broker wrote the file before starting us
    if claim is None:
        print("no usable node ID in", ids.path, file=sys.stderr)
        return 1
    if (str(claim.node_id), str(claim.version)) != (os.environ["NODEID_NODE_ID"], os.environ["NODEID_VERSION"]):
        print("the id file names", claim, "not the environment's node ID", file=sys.stderr)
        return 1
    left = claim.valid_until_ms - int(time.time() * 1000)
    print(f"python: node {claim.node_id} version {claim.version}, usable for {left} ms unless renewed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
