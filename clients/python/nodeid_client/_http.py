"""HttpGenerator: Snowflake IDs from the broker's GET /ids?n=K."""

from __future__ import annotations

import http.client
import json
import threading
from typing import List, Tuple
from urllib.parse import urlsplit

from . import _snowflake as sf
from .errors import NodeIdError, UnavailableError

# A kept-alive connection the broker (or anything between) closed while idle
# fails like this on its next request: it is retried once on a new one.
_DROPPED = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
            http.client.RemoteDisconnected)


class HttpGenerator:
    """Gets IDs from a nodeid-broker's /ids at url, its base URL (e.g.
    http://127.0.0.1:8080). Every ID is issued under the broker's own fence.

    Connections are kept alive and pooled: each call takes an idle one (or
    opens one), so threads may call at once. A request that fails on a reused
    connection (closed by the broker while idle) is sent once more on a new
    one: a GET of IDs is safe to repeat, since IDs issued and not returned are
    merely skipped. timeout (seconds) bounds each connect and read. Use
    close() or a with block to close the connections.
    """

    def __init__(self, url: str, *, timeout: float = 2.0):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self._url = url
        self._conn = (http.client.HTTPConnection if parts.scheme == "http"
                      else http.client.HTTPSConnection)
        self._host, self._port = parts.hostname, parts.port
        self._path = parts.path.rstrip("/") + "/ids?n="
        self._timeout = timeout
        self._lock = threading.Lock()
        self._idle: List[http.client.HTTPConnection] = []
        self._closed = False

    def next_id(self) -> int:
        """Returns a new ID; raises UnavailableError on a 503, NodeIdError on
        any other failure."""
        return self._fetch(1)[2][0]

    def next_ids(self, n: int) -> List[int]:
        """Returns n (1 to 10000) new strictly increasing IDs from one request;
        raises like next_id, ValueError or TypeError for a bad n."""
        sf.check_count(n)
        return self._fetch(n)[2]

    def close(self) -> None:
        """Closes the idle connections, and the others as their calls end;
        later calls raise NodeIdError."""
        with self._lock:
            self._closed, idle, self._idle = True, self._idle, []
        for conn in idle:
            conn.close()

    def __enter__(self) -> "HttpGenerator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

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
