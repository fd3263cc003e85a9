"""The conformance driver (clients/CONFORMANCE.md): calls one generator in a
loop and writes one line per call. Not part of the package's API.

    PYTHONPATH=. python3 -B conformance/driver.py --id-file PATH [--batch N] ...
"""

import argparse
import os
import signal
import sys
import threading
import time

sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from nodeid_client import (ClockBehindError, HttpGenerator, IdFileGenerator,
                           NotHeldError, UnavailableError, VersionChangedError)

_KINDS = ((NotHeldError, "NotHeld"), (VersionChangedError, "VersionChanged"),
          (ClockBehindError, "ClockBehind"), (UnavailableError, "Unavailable"))


def parse_steps(spec):
    """Parses --clock-steps AT:BY,... (ms) into a sorted list of (at, by)."""
    steps = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        at, sep, by = item.partition(":")
        try:
            if not sep or int(at) < 0:
                raise ValueError
            steps.append((int(at), int(by)))
        except ValueError:
            raise ValueError(f"--clock-steps: {item!r} is not AT:BY (ms, AT >= 0)") from None
    return sorted(steps, key=lambda s: s[0])


def stepped_clock(steps, start):
    """The host's wall clock (Unix ms) plus the sum of the steps whose AT (ms
    after start, on the monotonic clock) has come."""
    def clock():
        elapsed = (time.monotonic() - start) * 1000
        offset = sum(by for at, by in steps if at <= elapsed)
        return time.time_ns() // 1_000_000 + offset
    return clock


class Stop:
    """The driver's stop flag, set by SIGTERM, SIGINT or the end of stdin.

    Not a threading.Event: a signal handler runs in the main thread between
    two of its bytecodes, and one that called Event.set while the main thread
    was inside Event.wait, holding the Event's lock, would deadlock on it (a
    driver that ignored SIGTERM until its broker killed it)."""

    def __init__(self):
        self.stopped = False

    def set(self, *_):
        """Sets the flag: a plain assignment, safe in a handler or a thread."""
        self.stopped = True

    def sleep(self, seconds):
        """Sleeps up to seconds, in slices of 50 ms, unless the flag is set."""
        end = time.monotonic() + seconds
        while not self.stopped:
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.05))


def watch_stdin(stop):
    """Sets stop when stdin ends. It reads the file descriptor, not sys.stdin,
    whose buffer lock would abort the interpreter's exit (a daemon thread)."""
    try:
        while os.read(0, 65536):
            pass
    except OSError:
        pass
    stop.set()


def arguments(argv):
    p = argparse.ArgumentParser(prog="driver.py", description=__doc__.splitlines()[0])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--id-file", metavar="PATH")
    mode.add_argument("--url")
    mode.add_argument("--url-env", action="store_true")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--duration-ms", type=int)
    p.add_argument("--pause-ms", type=int, default=0)
    p.add_argument("--clock-steps", default="")
    p.add_argument("--reread-ms", type=int)
    p.add_argument("--prefetch", type=int, default=0)
    p.add_argument("--prefetch-max-age-ms", type=int)
    p.add_argument("--mutation")
    a = p.parse_args(argv)
    if not 1 <= a.batch <= 10000:
        p.error("--batch must be from 1 to 10000")
    for name in ("duration_ms", "pause_ms", "reread_ms"):
        if (getattr(a, name) or 0) < 0:
            p.error(f"--{name.replace('_', '-')} must not be negative")
    a.http = a.url is not None or a.url_env
    if a.http and (a.clock_steps or a.reread_ms is not None):
        p.error("--clock-steps and --reread-ms apply to --id-file only")
    if (a.prefetch or a.prefetch_max_age_ms is not None) and not a.http:
        p.error("--prefetch and --prefetch-max-age-ms apply to --url and --url-env only")
    if (a.prefetch_max_age_ms or 0) < 0:
        p.error("--prefetch-max-age-ms must not be negative")
    try:
        a.steps = parse_steps(a.clock_steps)
    except ValueError as e:
        p.error(str(e))
    return a, p


def main(argv=None):
    start = time.monotonic()
    a, p = arguments(argv)
    if a.http:
        try:
            ms = a.prefetch_max_age_ms  # None: the package's default; 0: no limit
            age = {} if ms is None else {"prefetch_max_age": ms / 1000 if ms else None}
            http = HttpGenerator(a.url, prefetch=a.prefetch, _mutation=a.mutation, **age)
        except ValueError as e:
            p.error(str(e))

        def call(n):
            b = http.next_batch(n)
            return b.node_id, b.version, "-", b.ids
    else:
        try:
            gen = IdFileGenerator(a.id_file, clock=stepped_clock(a.steps, start),
                                  reread=1.0 if a.reread_ms is None else a.reread_ms / 1000,
                                  _mutation=a.mutation)
        except ValueError as e:
            p.error(str(e))

        def call(n):  # next_id or next_ids, with the claim the IDs were issued under
            if n == 1:
                claim, one = gen._one()
                ids = [one]
            else:
                claim, ids = gen._issue(n)
            return claim.node_id, claim.version, claim.valid_until_ms, ids

    stop = Stop()
    signal.signal(signal.SIGTERM, stop.set)
    signal.signal(signal.SIGINT, stop.set)
    if a.duration_ms is None:  # with a duration stdin is not watched (CONFORMANCE.md)
        threading.Thread(target=watch_stdin, args=(stop,), daemon=True).start()
    # The duration runs from the first call (the clock steps from the start):
    # a slow start-up costs no calls, and there is always at least one.
    end = None if a.duration_ms is None else time.monotonic() + a.duration_ms / 1000
    calls = errors = 0
    out = sys.stdout
    try:
        while not stop.stopped:
            calls += 1
            try:
                node, version, until, ids = call(a.batch)
                line = f"ok {node} {version} {until} {' '.join(map(str, ids))}\n"
            except Exception as e:  # every failure is a line, never the end
                errors += 1
                kind = next((k for cls, k in _KINDS if isinstance(e, cls)), "Other")
                line = f"err {kind} {' '.join(str(e).split()) or type(e).__name__}\n"
            out.write(line)
            out.flush()
            if end is not None and time.monotonic() >= end:
                break
            pause = a.pause_ms / 1000 if a.pause_ms else (0.001 if line[0] == "e" else 0)
            if pause:
                stop.sleep(pause if end is None else min(pause, end - time.monotonic()))
        out.write(f"done {calls} {errors}\n")
        out.flush()
    except BrokenPipeError:  # the reader is gone: nobody to tell
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    if a.http:
        http.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
