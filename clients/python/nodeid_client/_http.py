"""HttpGenerator: Snowflake IDs from the broker's GET /ids?n=K."""

from __future__ import annotations

import http.client
import json
import math
import os
import threading
import time
from typing import List, Optional, Tuple
from urllib.parse import urlsplit

from . import _snowflake as sf
from ._idfile import Batch
from .errors import NodeIdError, UnavailableError

#: The variable nodeid-broker run (for its child) and the deploy kit (for the
#: application) set to the broker's base URL.
URL_VARIABLE = "NODEID_URL"

#: The testing-only rule breaker of HttpGenerator (CONFORMANCE.md): prefetched
#: IDs reported with the node ID and version of the latest answer.
HTTP_MUTATIONS = frozenset({"prefetch-latest-version"})

# The monotonic clock prefetched batches' ages are measured on (seconds); the
# tests replace it.
_monotonic = time.monotonic

# A kept-alive connection the broker (or anything between) closed while idle
# fails like this on its next request: it is retried once on a new one.
_DROPPED = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
            http.client.RemoteDisconnected)


def base_url(url: Optional[str]) -> str:
    """Returns the broker's base URL from url, its base or its /ids URL, or
    from NODEID_URL when url is None. Raises ValueError for an unset variable
    or a URL that is not http(s)."""
    if url is None:
        url = os.environ.get(URL_VARIABLE, "")
        if not url:
            raise ValueError(f"nodeid: no URL given and {URL_VARIABLE} is not set: pass the broker's "
                             f"base URL (e.g. http://127.0.0.1:8080) or set {URL_VARIABLE} (nodeid-broker run "
                             f"sets it for its child, the deploy kit for the application)")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"not an http(s) URL without a query: {url!r}")
    path = parts.path.rstrip("/")
    if path.endswith("/ids"):
        path = path[:-len("/ids")]
    return f"{parts.scheme}://{parts.netloc}{path}"


class HttpGenerator:
    """Gets IDs from a nodeid-broker's /ids at url: its base URL (e.g.
    http://127.0.0.1:8080) or its /ids URL; None (the default) reads the
    NODEID_URL variable. Every ID is issued under the broker's own fence.

    Connections are kept alive and pooled: each call takes an idle one (or
    opens one), so threads may call at once. A request that fails on a reused
    connection (closed by the broker while idle) is sent once more on a new
    one: a GET of IDs is safe to repeat, since IDs issued and not returned are
    merely skipped. timeout (seconds) bounds each connect and read. Use
    close() or a with block to close the connections.

    prefetch=P (1 to 10000; 0, the default, is off) keeps a batch of P IDs
    fetched ahead and fetches the next one in a background thread once half
    of it is used, so that most calls need no round trip. The broker issued
    every ID under its fence, so a prefetched ID stays unique whenever it is
    used; it carries the time it was fetched. A batch is never split across
    two answers: IDs left over when a call wants more are skipped, and so are
    the IDs not used when the generator is closed.

    prefetch_max_age (seconds, default 1.0; None: no limit) bounds how old a
    prefetched ID's time may be: a call skips a batch whose fetch was sent
    longer ago than that (on the monotonic clock, before the call) and uses
    one fetched anew, so that IDs stay roughly in time order after an idle
    spell.

    _mutation is for testing only (the conformance suite): a name of
    HTTP_MUTATIONS breaks that rule on purpose. Never set it in production.
    """

    def __init__(self, url: Optional[str] = None, *, timeout: float = 2.0, prefetch: int = 0,
                 prefetch_max_age: Optional[float] = 1.0, _mutation: Optional[str] = None):
        self._url = base_url(url)
        parts = urlsplit(self._url)
        if isinstance(prefetch, bool) or not isinstance(prefetch, int) or not 0 <= prefetch <= 10000:
            raise ValueError(f"prefetch must be an int from 0 (off) to 10000, not {prefetch!r}")
        if prefetch_max_age is not None and (
                isinstance(prefetch_max_age, bool) or not isinstance(prefetch_max_age, (int, float))
                or not 0 < prefetch_max_age < math.inf):
            raise ValueError(f"prefetch_max_age must be a finite number of seconds > 0, or None "
                             f"(no limit), not {prefetch_max_age!r}")
        if _mutation is not None and _mutation not in HTTP_MUTATIONS:
            raise ValueError(f"unknown mutation {_mutation!r}: want one of {sorted(HTTP_MUTATIONS)}")
        self._conn = (http.client.HTTPConnection if parts.scheme == "http"
                      else http.client.HTTPSConnection)
        self._host, self._port = parts.hostname, parts.port
        self._path = parts.path + "/ids?n="
        self._timeout = timeout
        self._lock = threading.Lock()
        self._idle: List[http.client.HTTPConnection] = []
        self._closed = False
        self._prefetch = prefetch
        self._max_age = math.inf if prefetch_max_age is None else float(prefetch_max_age)
        self._mutation = _mutation
        # Prefetching: the batch in use (its IDs from _pos on are unused),
        # the next one, and the one fetch at a time that fills it; all under
        # _lock, which _filled shares. A batch is usable by a call that
        # starts at or before the monotonic time its fetch was sent plus
        # _max_age.
        self._filled = threading.Condition(self._lock)
        self._ids: List[int] = []
        self._pos = 0
        self._node = self._version = 0
        self._low = 0  # from this _pos on the next batch is fetched
        self._until = -math.inf  # the batch in use is usable by calls up to here
        self._ready: Optional[Batch] = None
        self._ready_until = -math.inf  # and the next one
        self._fetching = 0  # the number of the fetch under way, 0 for none
        self._fetching_until = -math.inf  # its batch's (and of the last to start)
        self._fetches = 0  # fetches started
        self._failed: Tuple[int, Optional[BaseException]] = (0, None)  # the last failed fetch

    def next_id(self) -> int:
        """Returns a new ID; raises UnavailableError on a 503, NodeIdError on
        any other failure."""
        if self._prefetch:
            now = _monotonic()
            with self._lock:
                i = self._pos
                if i < len(self._ids) and now <= self._until:
                    self._pos = i + 1
                    if i + 1 >= self._low:
                        self._fetch_ahead()
                    return self._ids[i]
            return self._take(1, now).ids[0]
        return self._fetch(1)[2][0]

    def next_ids(self, n: int) -> List[int]:
        """Returns n (1 to 10000) new strictly increasing IDs from one answer;
        raises like next_id, ValueError or TypeError for a bad n."""
        return self.next_batch(n).ids

    def next_batch(self, n: int) -> Batch:
        """Returns n (1 to 10000) new strictly increasing IDs from one answer
        with the node ID and version they were issued under (claim None);
        raises like next_ids."""
        sf.check_count(n)
        if self._prefetch:
            return self._take(n, _monotonic())
        node_id, version, ids = self._fetch(n)
        return Batch(ids, node_id, version, None)

    def close(self) -> None:
        """Closes the idle connections, and the others as their calls end;
        later calls raise NodeIdError."""
        with self._lock:
            self._closed, idle, self._idle = True, self._idle, []
            self._ids, self._pos, self._ready = [], 0, None
        for conn in idle:
            conn.close()

    def __enter__(self) -> "HttpGenerator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- prefetching -------------------------------------------------------

    def _take(self, n: int, now: float) -> Batch:
        """Takes n IDs from the prefetched batch, moving to the next one (or
        waiting for it, or fetching it) when this one has fewer left or is
        too old for a call started at monotonic time now."""
        with self._lock:
            while True:
                i = self._pos
                if len(self._ids) - i >= n and now <= self._until:
                    self._pos = i + n
                    if self._pos >= self._low:
                        self._fetch_ahead()
                    return Batch(self._ids[i:i + n], self._node, self._version, None)
                if self._closed:
                    raise NodeIdError("nodeid: HttpGenerator is closed")
                if self._ready is not None:
                    self._use(self._ready, self._ready_until)  # if too old, skipped above
                    continue
                k = self._fetching
                if not k or now > self._fetching_until:  # none, or sent too long ago
                    k = self._start(max(n, self._prefetch))
                while self._fetching == k:
                    self._filled.wait()
                failed, err = self._failed
                if failed == k and self._ready is None:
                    raise err  # type: ignore[misc]

    def _use(self, b: Batch, until: float) -> None:
        """Makes b the batch in use (the rest of the one before is skipped)."""
        self._ids, self._pos, self._node, self._version = b.ids, 0, b.node_id, b.version
        self._low = len(b.ids) - self._prefetch // 2
        self._until = until
        self._ready = None

    def _fetch_ahead(self) -> None:
        """Starts fetching the next batch unless it is there or under way."""
        if self._ready is None and not self._fetching and not self._closed:
            self._start(self._prefetch)

    def _start(self, n: int) -> int:
        """Starts fetch number k of n IDs in a thread of its own; returns k.
        A fetch under way that was sent too long ago is left to end alone."""
        self._fetches += 1
        k = self._fetches
        until = _monotonic() + self._max_age  # before the request is sent
        threading.Thread(target=self._fill, args=(k, n, until), daemon=True,
                         name="nodeid-prefetch").start()
        self._fetching = k  # the thread waits for _lock, held here, to report
        self._fetching_until = until
        return k

    def _fill(self, k: int, n: int, until: float) -> None:
        """Fetch k: GETs n IDs into _ready (usable by calls up to until),
        or records why not."""
        b: Optional[Batch] = None
        err: Optional[BaseException] = None
        try:
            node_id, version, ids = self._fetch(n)
            b = Batch(ids, node_id, version, None)
        except BaseException as e:  # handed to the caller waiting for it
            err = e
        with self._lock:
            if self._fetching == k:
                self._fetching = 0
            if b is not None and until >= self._ready_until:  # not over a fresher one
                self._ready, self._ready_until = b, until
                if self._mutation == "prefetch-latest-version":
                    self._node, self._version = b.node_id, b.version
            else:
                self._failed = (k, err)
            self._filled.notify_all()

    # -- internals ---------------------------------------------------------

    def _fetch(self, n: int) -> Tuple[int, int, List[int]]:
        """GETs n IDs: returns the answer's nodeId, version and IDs."""
        with self._lock:
            if self._closed:
                raise NodeIdError("nodeid: HttpGenerator is closed")
            conn = self._idle.pop() if self._idle else self._conn(
                self._host, self._port, timeout=self._timeout)
        try:
            status, retry_after, body = self._get(conn, self._path + str(n))
        except BaseException:
            conn.close()
            raise
        with self._lock:
            if self._closed:
                conn.close()
            else:
                self._idle.append(conn)
        return self._answer(n, status, retry_after, body)

    def _get(self, conn: http.client.HTTPConnection, target: str) -> Tuple[int, str, bytes]:
        """Sends the GET on conn, again on a new connection if a reused one was
        dropped: the status, the Retry-After header and the body."""
        for retry in (False, True):
            reused = conn.sock is not None
            try:
                conn.request("GET", target)
                resp = conn.getresponse()
                return resp.status, resp.getheader("Retry-After", ""), resp.read()
            except _DROPPED as e:
                conn.close()  # the next request opens a new connection
                if retry or not reused:
                    raise NodeIdError(f"nodeid: GET {self._url}/ids: {e!r}") from e
            except (OSError, http.client.HTTPException) as e:
                raise NodeIdError(f"nodeid: GET {self._url}/ids: {e!r}") from e
        raise AssertionError("unreachable")

    def _answer(self, n: int, status: int, retry_after: str, body: bytes) -> Tuple[int, int, List[int]]:
        """Turns a response into (nodeId, version, IDs) or the error it says."""
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        if status == 200:
            try:
                ids = [int(s) for s in doc["ids"]]
                node_id, version = doc["nodeId"], doc["version"]
            except (TypeError, KeyError, ValueError):
                ids = None
            if ids is None or len(ids) != n or not isinstance(node_id, int) or not isinstance(version, int):
                raise NodeIdError(f"nodeid: GET {self._url}/ids?n={n}: not an answer of {n} IDs: {body[:200]!r}")
            return node_id, version, ids
        reason = doc.get("reason") if isinstance(doc, dict) else None
        if not isinstance(reason, str):
            reason = body[:200].decode("utf-8", "replace").strip()
        if status == 503:
            try:
                wait = float(retry_after)
            except ValueError:
                wait = 1.0
            raise UnavailableError(f"nodeid: the broker at {self._url} serves no IDs now: {reason}", wait)
        raise NodeIdError(f"nodeid: GET {self._url}/ids?n={n}: HTTP {status}: {reason}")
