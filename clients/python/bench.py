"""IDs per second of nodeid_client in one process, one thread.

    python3 bench.py                              # id-file mode on a file of its own
    python3 bench.py --id-file /run/nodeid/id.json --url http://127.0.0.1:8080

Id-file mode without --id-file writes a claim valid for an hour to a
temporary file: it measures the generator, not a broker. HTTP mode runs only
with --url (a broker's base URL).
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nodeid_client import HttpGenerator, IdFileGenerator  # noqa: E402


def rate(call, per_call, seconds):
    """Calls call for about seconds and returns IDs per second."""
    calls, start = 0, time.perf_counter()
    end = start + seconds
    while True:
        for _ in range(100):
            call()
        calls += 100
        now = time.perf_counter()
        if now >= end:
            return calls * per_call / (now - start)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--id-file", help="the broker's id file (default: a temporary one)")
    p.add_argument("--url", help="the broker's base URL for HTTP mode (default: skip it)")
    p.add_argument("--seconds", type=float, default=3.0, help="per measurement")
    a = p.parse_args()
    print(f"python {sys.version.split()[0]}, {a.seconds:g} s per figure")
    with tempfile.TemporaryDirectory() as d:
        path = a.id_file
        if path is None:
            path = os.path.join(d, "id.json")
            now = time.time_ns() // 1_000_000
            with open(path, "w") as f:
                json.dump({"nodeId": 1, "version": 1, "floorMs": now - 1, "validUntilMs": now + 3600_000}, f)
        gen = IdFileGenerator(path)
        print(f"id-file next_id:          {rate(gen.next_id, 1, a.seconds):12,.0f} IDs/s")
        print(f"id-file next_ids(1000):   {rate(lambda: gen.next_ids(1000), 1000, a.seconds):12,.0f} IDs/s")
    if a.url:
        with HttpGenerator(a.url) as http:
            print(f"http next_id:             {rate(http.next_id, 1, a.seconds):12,.0f} IDs/s")
            print(f"http next_ids(1000):      {rate(lambda: http.next_ids(1000), 1000, a.seconds):12,.0f} IDs/s")
            print(f"http next_ids(10000):     {rate(lambda: http.next_ids(10000), 10000, a.seconds):12,.0f} IDs/s")
        with HttpGenerator(a.url, prefetch=10000) as http:
            http.next_id()  # the first batch
            print(f"http prefetch=10000 next_id: {rate(http.next_id, 1, a.seconds):9,.0f} IDs/s")


if __name__ == "__main__":
    main()
