"""Tests of HttpGenerator against a local http.server that answers like the
broker's /ids (node/http.go)."""

import json
import os
import socket
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from unittest import mock

from nodeid_client import Batch, HttpGenerator, NodeIdError, UnavailableError, _http


class Broker(ThreadingHTTPServer):
    """A fake broker: mode is "ok", "503", "short" (one ID too few), "drop"
    (answers, then closes the kept-alive connection without saying so) or
    "hang" (answers once release is set)."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.mode = "ok"
        self.version = 3
        self.next = 1000
        self.lock = threading.Lock()
        self.connections = set()
        self.requests = []
        self.release = threading.Event()
        threading.Thread(target=self.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]

    def handle_error(self, request, client_address):
        pass  # a client that timed out and left: not the test's concern

    def stop(self):
        self.release.set()
        self.shutdown()
        self.server_close()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # headers and body are two writes

    def log_message(self, *args):
        pass

    def reply(self, code, doc, **headers):
        body = (json.dumps(doc) + "\n").encode()
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        b = self.server
        with b.lock:
            b.connections.add(self.client_address)
            b.requests.append(self.path)
        u = urlsplit(self.path)
        q = parse_qs(u.query)
        if u.path != "/ids":
            return self.reply(404, {"status": "not_found", "reason": u.path})
        try:
            n = int(q["n"][0])
            if not 1 <= n <= 10000:
                raise ValueError
        except (KeyError, ValueError):
            return self.reply(400, {"status": "bad_request", "reason": "n is out of range"})
        if b.mode == "503":
            return self.reply(503, {"status": "unavailable", "reason": "nodeid: fenced"}, **{"Retry-After": "1"})
        if b.mode == "hang":
            b.release.wait()
        with b.lock:
            first, b.next = b.next, b.next + n
        count = n - 1 if b.mode == "short" else n
        self.reply(200, {"nodeId": 7, "version": b.version, "ids": [str(first + i) for i in range(count)]})
        if b.mode == "drop":
            self.close_connection = True


def in_threads(work, k=8):
    """Runs work(list) in k threads at once; returns their lists."""
    out = [[] for _ in range(k)]
    threads = [threading.Thread(target=work, args=(r,)) for r in out]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


class HttpTest(unittest.TestCase):
    def setUp(self):
        self.broker = Broker()
        self.addCleanup(self.broker.stop)
        self.gen = HttpGenerator(self.broker.url)
        self.addCleanup(self.gen.close)

    def test_ids_on_one_kept_alive_connection(self):
        self.assertEqual(self.gen.next_id(), 1000)
        self.assertEqual(self.gen.next_ids(3), [1001, 1002, 1003])
        self.assertEqual(self.gen._fetch(2), (7, 3, [1004, 1005]))
        self.assertEqual(len(self.broker.connections), 1)
        self.assertEqual(self.broker.requests, ["/ids?n=1", "/ids?n=3", "/ids?n=2"])

    def test_base_url_with_a_path_and_slash(self):
        with HttpGenerator(self.broker.url + "/") as g:
            self.assertEqual(g.next_id(), 1000)
        with HttpGenerator(self.broker.url + "/x/") as g:
            with self.assertRaisesRegex(NodeIdError, "HTTP 404"):
                g.next_id()

    def test_unavailable(self):
        self.broker.mode = "503"
        with self.assertRaisesRegex(UnavailableError, "nodeid: fenced") as e:
            self.gen.next_ids(5)
        self.assertEqual(e.exception.retry_after, 1.0)
        self.broker.mode = "ok"
        self.assertEqual(self.gen.next_id(), 1000)
        self.assertEqual(len(self.broker.connections), 1)

    def test_bad_request(self):
        with self.assertRaisesRegex(NodeIdError, "HTTP 400: n is out of range") as e:
            self.gen._fetch(0)  # past next_ids' own check
        self.assertNotIsInstance(e.exception, UnavailableError)

    def test_bad_counts_are_not_sent(self):
        for n, err in ((0, ValueError), (10001, ValueError), (True, TypeError)):
            with self.subTest(n=n), self.assertRaises(err):
                self.gen.next_ids(n)
        self.assertEqual(self.broker.requests, [])

    def test_wrong_count(self):
        self.broker.mode = "short"
        with self.assertRaisesRegex(NodeIdError, "not an answer of 3 IDs"):
            self.gen.next_ids(3)

    def test_dropped_connection_is_reopened_once(self):
        self.broker.mode = "drop"
        self.assertEqual(self.gen.next_id(), 1000)  # then the broker closes it
        self.assertEqual(self.gen.next_id(), 1001)  # resent on a new connection
        self.assertEqual(len(self.broker.connections), 2)

    def test_no_broker(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens on port
        with HttpGenerator("http://127.0.0.1:%d" % port) as g:
            with self.assertRaises(NodeIdError):
                g.next_id()

    def test_timeout(self):
        self.broker.mode = "hang"
        with HttpGenerator(self.broker.url, timeout=0.05) as g:
            with self.assertRaisesRegex(NodeIdError, "timed out"):
                g.next_id()

    def test_closed(self):
        self.gen.next_id()
        self.gen.close()
        with self.assertRaisesRegex(NodeIdError, "closed"):
            self.gen.next_id()

    def test_not_a_url(self):
        for url in ("127.0.0.1:8080", "ftp://x", "http://"):
            with self.subTest(url=url), self.assertRaises(ValueError):
                HttpGenerator(url)

    def test_threads(self):
        def work(r):
            for _ in range(50):
                r.extend(self.gen.next_ids(3))
        out = in_threads(work)
        every = [i for r in out for i in r]
        self.assertEqual(sorted(every), list(range(1000, 1000 + 8 * 50 * 3)))
        self.assertLessEqual(len(self.broker.connections), 8)


class UrlTest(unittest.TestCase):
    """The broker's base URL or its /ids URL, given or from NODEID_URL."""

    def setUp(self):
        self.broker = Broker()
        self.addCleanup(self.broker.stop)

    def test_base_or_ids_url(self):
        for url in (self.broker.url, self.broker.url + "/", self.broker.url + "/ids", self.broker.url + "/ids/"):
            with self.subTest(url=url), HttpGenerator(url) as g:
                g.next_id()
        self.assertEqual(self.broker.requests, ["/ids?n=1"] * 4)

    def test_from_nodeid_url(self):
        for url in (self.broker.url, self.broker.url + "/ids"):
            with self.subTest(url=url), mock.patch.dict(os.environ, {"NODEID_URL": url}), HttpGenerator() as g:
                self.assertEqual(g.next_batch(2), Batch([1000, 1001], 7, 3, None) if url == self.broker.url
                                 else Batch([1002, 1003], 7, 3, None))

    def test_nodeid_url_unset(self):
        env = {k: v for k, v in os.environ.items() if k != "NODEID_URL"}
        with mock.patch.dict(os.environ, env, clear=True), self.assertRaisesRegex(ValueError, "NODEID_URL is not set"):
            HttpGenerator()


class PrefetchTest(unittest.TestCase):
    """HttpGenerator(prefetch=P): a batch of P fetched ahead. The monotonic
    clock batches' ages are measured on is self.now, which only the tests
    move."""

    def setUp(self):
        self.broker = Broker()
        self.addCleanup(self.broker.stop)
        self.now = 100.0
        p = mock.patch.object(_http, "_monotonic", lambda: self.now)
        p.start()
        self.addCleanup(p.stop)

    def gen(self, p, **kw):
        g = HttpGenerator(self.broker.url, prefetch=p, **kw)
        self.addCleanup(g.close)
        return g

    def wait_requests(self, k):
        """Waits (bounded) for the broker to have had k requests."""
        for _ in range(2000):
            with self.broker.lock:
                if len(self.broker.requests) >= k:
                    return
            threading.Event().wait(0.005)
        self.fail(f"no {k} requests: {self.broker.requests}")

    def test_one_round_trip_per_batch(self):
        g = self.gen(10)
        got = [g.next_id() for _ in range(5)]  # 5 used: half of 10, the next one is fetched
        self.wait_requests(2)
        got += [g.next_id() for _ in range(5)] + [g.next_id()]
        self.assertEqual(got, list(range(1000, 1011)))
        self.assertEqual(self.broker.requests[:2], ["/ids?n=10", "/ids?n=10"])

    def test_batch_from_one_answer_with_its_version(self):
        g = self.gen(10)
        self.assertEqual(g.next_batch(4), Batch([1000, 1001, 1002, 1003], 7, 3, None))
        self.broker.version = 4  # another version from the next answer on
        self.assertEqual(g.next_batch(4), Batch([1004, 1005, 1006, 1007], 7, 3, None))
        self.wait_requests(2)
        # 2 left of the first answer: skipped, as a batch comes from one answer
        self.assertEqual(g.next_batch(4), Batch([1010, 1011, 1012, 1013], 7, 4, None))

    def test_bigger_than_prefetch(self):
        g = self.gen(4)
        self.assertEqual(g.next_ids(6), list(range(1000, 1006)))
        self.assertEqual(self.broker.requests[0], "/ids?n=6")

    def test_error_once_used_up(self):
        g = self.gen(4)
        self.assertEqual(g.next_id(), 1000)
        self.broker.mode = "503"
        self.assertEqual(g.next_id(), 1001)  # the fetch ahead fails: what is left is still good
        self.wait_requests(2)
        self.assertEqual([g.next_id(), g.next_id()], [1002, 1003])
        with self.assertRaises(UnavailableError):
            g.next_id()
        self.broker.mode = "ok"
        self.assertEqual(g.next_ids(2), [1004, 1005])

    def test_mutation_latest_version(self):
        g = self.gen(10, _mutation="prefetch-latest-version")
        g.next_batch(6)  # the next answer is fetched, with another version
        self.broker.version = 4
        self.wait_requests(2)
        for _ in range(100):
            if g._ready is not None:
                break
            threading.Event().wait(0.01)
        self.assertEqual(g.next_batch(2).version, 4)  # the mutant's wrong version for IDs of version 3

    def wait_ready(self, g):
        """Waits (bounded) for g's batch fetched ahead to be there."""
        for _ in range(2000):
            with g._lock:
                if g._ready is not None:
                    return
            threading.Event().wait(0.005)
        self.fail("no batch fetched ahead")

    def test_max_age_default_skips_an_old_batch(self):
        g = self.gen(10)  # prefetch_max_age 1 s
        self.assertEqual(g.next_id(), 1000)
        self.now += 1.0  # as old as the max age: still used
        self.assertEqual(g.next_id(), 1001)
        self.now += 0.001  # older: the next ID is from a new fetch
        self.assertEqual(g.next_id(), 1010)
        self.assertEqual(self.broker.requests, ["/ids?n=10", "/ids?n=10"])
        self.assertEqual(g.next_ids(2), [1011, 1012])  # the new batch in use
        self.assertEqual(len(self.broker.requests), 2)

    def test_max_age_skips_an_old_batch_fetched_ahead(self):
        g = self.gen(10, prefetch_max_age=0.5)
        self.assertEqual(g.next_ids(5), list(range(1000, 1005)))  # half: 1010.. fetched ahead at 100.0
        self.wait_ready(g)
        self.now += 0.5
        self.assertEqual(g.next_ids(5), list(range(1005, 1010)))
        self.assertEqual(g.next_ids(5), list(range(1010, 1015)))  # the batch fetched ahead: young enough
        self.wait_ready(g)  # 1020.. fetched ahead at 100.5
        self.assertEqual(len(self.broker.requests), 3)
        self.now += 0.6  # both batches too old
        self.assertEqual(g.next_id(), 1030)
        self.assertEqual(len(self.broker.requests), 4)

    def test_max_age_does_not_wait_for_an_old_fetch(self):
        g = self.gen(10)
        self.assertEqual(g.next_ids(4), [1000, 1001, 1002, 1003])
        self.broker.mode = "hang"
        self.assertEqual(g.next_id(), 1004)  # half: the fetch ahead, which hangs
        self.wait_requests(2)
        self.broker.mode = "ok"
        self.now += 1.5
        self.assertEqual(g.next_id(), 1010)  # from a new fetch, not the one sent 1.5 s ago
        self.assertEqual(len(self.broker.requests), 3)
        self.broker.release.set()

    def test_no_max_age_keeps_old_batches(self):
        g = self.gen(10, prefetch_max_age=None)
        self.assertEqual(g.next_id(), 1000)
        self.now += 86400.0
        self.assertEqual(g.next_ids(4), [1001, 1002, 1003, 1004])
        self.wait_ready(g)
        self.now += 86400.0
        self.assertEqual(g.next_ids(6), list(range(1010, 1016)))  # 5 left of the first: skipped
        self.assertEqual(self.broker.requests, ["/ids?n=10", "/ids?n=10"])

    def test_bad_max_age(self):
        for a in (0, -1, 0.0, float("inf"), float("nan"), True, "1"):
            with self.subTest(a=a), self.assertRaises(ValueError):
                HttpGenerator(self.broker.url, prefetch=10, prefetch_max_age=a)
        HttpGenerator(self.broker.url, prefetch_max_age=2).close()

    def test_bad_prefetch(self):
        for p in (-1, 10001, True, 1.5):
            with self.subTest(p=p), self.assertRaises(ValueError):
                HttpGenerator(self.broker.url, prefetch=p)
        with self.assertRaises(ValueError):
            HttpGenerator(self.broker.url, _mutation="ignore-floor")

    def test_threads(self):
        g = self.gen(7)

        def work(r):
            for _ in range(50):
                r.append(g.next_id())
                r.extend(g.next_ids(3))
        out = in_threads(work)
        every = [i for r in out for i in r]
        self.assertEqual(len(set(every)), len(every))
        for r in out:
            self.assertEqual(r, sorted(r))


if __name__ == "__main__":
    unittest.main()
