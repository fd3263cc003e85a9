"""A stand-in conformance driver for the suite's own tests.

It speaks CONFORMANCE.md's protocol with a minimal id-file and HTTP generator
of its own and every --mutation, so that the suite can be run (and its
mutation tests checked) without the real clients:

    NODEID_CLIENTS_DIR=clients/conformance/testdata/fake go test ./clients/conformance

Only "python" exists here. It is not a client: it keeps the rules of
clients/README.md as simply as possible, for the suite to test against.
"""

import http.client
import json
import os
import signal
import sys
import threading
import time
import urllib.parse

EPOCH_MS = 1735689600000
MAX_CLOCK_WAIT_S = 5.0
MUTATIONS = ("ignore-valid-until", "ignore-floor", "ignore-version", "ignore-missing", "allow-backwards",
             "prefetch-latest-version")


class Err(Exception):
    kind = "Other"


class NotHeld(Err):
    kind = "NotHeld"


class VersionChanged(Err):
    kind = "VersionChanged"


class ClockBehind(Err):
    kind = "ClockBehind"


class Unavailable(Err):
    kind = "Unavailable"


class Clock:
    """The host's wall clock plus an offset that steps at given times."""

    def __init__(self, steps):
        self.start = time.monotonic()
        self.steps = steps  # [(at_ms, by_ms)], in order

    def now_ms(self):
        elapsed = (time.monotonic() - self.start) * 1000
        off = sum(by for at, by in self.steps if at <= elapsed)
        return time.time_ns() // 1_000_000 + off


def parse_claim(raw, path):
    try:
        c = json.loads(raw)
    except ValueError as e:
        raise NotHeld("%s: not JSON: %s" % (path, e))
    if not isinstance(c, dict):
        raise NotHeld("%s: not a JSON object" % path)
    out = {}
    for f in ("nodeId", "version", "floorMs", "validUntilMs"):
        v = c.get(f)
        if type(v) is not int or v < 0:
            raise NotHeld("%s: %s missing, negative or not an integer: %r" % (path, f, v))
        out[f] = v
    return out


class IdFileGenerator:
    def __init__(self, path, clock, reread_ms=1000, mutation=None):
        self.path, self.clock, self.reread = path, clock, reread_ms / 1000.0
        self.mutation = mutation
        self.lock = threading.Lock()
        self.read_at = None
        self.content, self.read_err = None, None
        self.last_good = None
        self.claim = None  # (node, version) of the first claim used
        self.dead = False
        self.last_ts, self.seq = -1, -1  # ms since the epoch

    def _read(self):
        self.read_at = time.monotonic()
        try:
            with open(self.path) as f:
                raw = f.read()
        except FileNotFoundError:
            self.content, self.read_err = None, NotHeld("%s: no id file" % self.path)
            return
        except OSError as e:
            self.content, self.read_err = None, NotHeld("%s: %s" % (self.path, e))
            return
        try:
            self.content, self.read_err = parse_claim(raw, self.path), None
            self.last_good = self.content
        except NotHeld as e:
            self.content, self.read_err = None, e

    def next_ids(self, n):
        with self.lock:
            if self.read_at is None or time.monotonic() - self.read_at >= self.reread:
                self._read()
            c = self.content
            if c is None:
                if self.mutation == "ignore-missing" and self.last_good is not None:
                    c = self.last_good
                else:
                    raise self.read_err
            key = (c["nodeId"], c["version"])
            if self.dead:
                raise VersionChanged("stopped for good")
            if self.claim is None:
                self.claim = key
            elif key != self.claim:
                if self.mutation == "ignore-version":
                    self.claim = key
                else:
                    self.dead = True
                    raise VersionChanged("%s names node %d version %d, not %d version %d" % ((self.path,) + key + self.claim))
            floor = c["floorMs"] - EPOCH_MS
            if self.mutation == "ignore-floor":
                floor = -1
            waited = time.monotonic()
            while True:
                now = self.clock.now_ms() - EPOCH_MS
                low = max(floor + 1, self.last_ts)
                if self.mutation == "allow-backwards":
                    low = floor + 1
                if now >= low:
                    break
                if time.monotonic() - waited > MAX_CLOCK_WAIT_S:
                    raise ClockBehind("clock %d ms behind" % (low - now))
                time.sleep(min(low - now, 50) / 1000.0)
            ids, ts, seq = [], self.last_ts, self.seq
            if now != ts:
                ts, seq = now, -1
            while len(ids) < n:
                if seq == 4095:
                    while self.clock.now_ms() - EPOCH_MS <= ts:
                        time.sleep(0.0002)
                    ts, seq = self.clock.now_ms() - EPOCH_MS, -1
                seq += 1
                ids.append(ts << 22 | c["nodeId"] << 12 | seq)
            if self.mutation != "ignore-valid-until" and ts + EPOCH_MS >= c["validUntilMs"]:
                raise NotHeld("%s: expired (validUntilMs %d)" % (self.path, c["validUntilMs"]))
            self.last_ts, self.seq = ts, seq
            return c, ids


class HttpGenerator:
    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.conn = None

    def next_ids(self, n):
        return self.fetch(n)

    def fetch(self, n):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
        try:
            self.conn.request("GET", "/ids?n=%d" % n)
            r = self.conn.getresponse()
            body = r.read()
        except (OSError, http.client.HTTPException) as e:
            self.conn.close()
            self.conn = None
            raise Err("GET /ids: %s" % e)
        if r.status == 503:
            raise Unavailable(body.decode(errors="replace").strip())
        if r.status != 200:
            raise Err("GET /ids: HTTP %d" % r.status)
        j = json.loads(body)
        return {"nodeId": j["nodeId"], "version": j["version"], "validUntilMs": None}, [int(x) for x in j["ids"]]


class Prefetcher:
    """HTTP with a batch of p fetched ahead, the next one fetched (in the
    calling thread, its failure ignored) once half is used; a call's IDs come
    from one answer. The mutation prefetch-latest-version labels the IDs in
    hand with the latest answer's node and version."""

    def __init__(self, http, p, mutation):
        self.http, self.p, self.mutation = http, p, mutation
        self.claim, self.ids, self.next = None, [], None

    def next_ids(self, n):
        if len(self.ids) < n:
            self.claim, self.ids = self.next or self.http.fetch(max(n, self.p))
            self.next = None
        out, self.ids = self.ids[:n], self.ids[n:]
        claim = self.claim
        if self.next is None and len(self.ids) <= self.p // 2:
            try:
                self.next = self.http.fetch(self.p)
            except Err:
                pass
            if self.next is not None and self.mutation == "prefetch-latest-version":
                self.claim = self.next[0]
        return claim, out


class Flag:
    """A stop flag that a signal handler may set (no lock)."""

    def __init__(self):
        self.value = False

    def set(self):
        self.value = True

    def is_set(self):
        return self.value


def usage(msg):
    sys.stderr.write("driver: %s\n" % msg)
    sys.exit(2)


def main(argv):
    opts = {"batch": 1, "pause": 0, "duration": None, "steps": [], "reread": 1000, "mutation": None}
    path = url = None
    prefetch = 0
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--url-env":
            url = os.environ.get("NODEID_URL") or usage("NODEID_URL is not set")
            i += 1
            continue
        if i + 1 >= len(argv):
            usage("%s needs a value" % a)
        v = argv[i + 1]
        i += 2
        try:
            if a == "--id-file":
                path = v
            elif a == "--url":
                url = v
            elif a == "--prefetch":
                prefetch = int(v)
            elif a == "--batch":
                opts["batch"] = int(v)
            elif a == "--duration-ms":
                opts["duration"] = int(v)
            elif a == "--pause-ms":
                opts["pause"] = int(v)
            elif a == "--reread-ms":
                opts["reread"] = int(v)
            elif a == "--clock-steps":
                for item in v.split(","):
                    at, by = item.split(":")
                    opts["steps"].append((int(at), int(by)))
            elif a == "--mutation":
                if v not in MUTATIONS:
                    usage("unknown mutation %r" % v)
                opts["mutation"] = v
            else:
                usage("unknown argument %r" % a)
        except ValueError:
            usage("%s %r: not a number" % (a, v))
    if (path is None) == (url is None):
        usage("want exactly one of --id-file and --url")
    if opts["batch"] < 1:
        usage("--batch must be at least 1")
    clock = Clock(opts["steps"])
    if path is not None:
        gen = IdFileGenerator(path, clock, opts["reread"], opts["mutation"])
    else:
        gen = HttpGenerator(url)
        if prefetch:
            gen = Prefetcher(gen, prefetch, opts["mutation"])

    # A signal handler must take no lock: Event.set in a handler that runs
    # while the main thread is inside Event.wait can deadlock on the
    # Event's own lock. The handler sets a flag; pauses are short sleeps.
    stop = Flag()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if opts["duration"] is None:
        def watch_stdin():
            while sys.stdin.buffer.read(4096):
                pass
            stop.set()
        threading.Thread(target=watch_stdin, daemon=True).start()
    end = None if opts["duration"] is None else time.monotonic() + opts["duration"] / 1000.0
    calls = errors = 0
    out = sys.stdout
    while not stop.is_set() and (end is None or time.monotonic() < end):
        calls += 1
        try:
            c, ids = gen.next_ids(opts["batch"])
            vu = "-" if c["validUntilMs"] is None else str(c["validUntilMs"])
            out.write("ok %d %d %s %s\n" % (c["nodeId"], c["version"], vu, " ".join(map(str, ids))))
            pause = opts["pause"]
        except Err as e:
            errors += 1
            out.write("err %s %s\n" % (e.kind, str(e).replace("\n", " ")))
            pause = opts["pause"] or 1
        out.flush()
        if pause and not stop.is_set():
            time.sleep(pause / 1000.0)
    out.write("done %d %d\n" % (calls, errors))
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
