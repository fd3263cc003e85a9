"""Tests of IdFileGenerator: every rule of clients/README.md, on a fake clock."""

import json
import os
import tempfile
import threading
import unittest
from unittest import mock

from nodeid_client import (Claim, ClockBehindError, IdFileGenerator, NotHeldError,
                           VersionChangedError, decode)
from nodeid_client import _idfile

T = 1_800_000_000_000  # Unix ms the fake clock starts at


class FakeTime:
    """The host's wall clock (Unix ms) and monotonic clock (s), moved by hand
    or by the generator's sleeps, which advance both."""

    def __init__(self, wall_ms):
        self.wall = float(wall_ms)
        self.mono = 1000.0
        self.slept = 0.0

    def clock(self):
        return int(self.wall)

    def monotonic(self):
        return self.mono

    def sleep(self, s):
        assert 0 <= s <= 0.05, s
        self.slept += s
        self.mono += s
        self.wall += s * 1000

    def advance(self, ms):
        self.wall += ms
        self.mono += ms / 1000


class Base(unittest.TestCase):
    """Runs each rule through next_id; NextIdsOne runs them through next_ids(1)."""

    def one(self, gen):
        return gen.next_id()

    def setUp(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.path = os.path.join(d.name, "id.json")
        self.time = FakeTime(T)
        for name in ("_monotonic", "_sleep"):
            p = mock.patch.object(_idfile, name, getattr(self.time, name.lstrip("_")))
            p.start()
            self.addCleanup(p.stop)

    def gen(self, **kw):
        return IdFileGenerator(self.path, clock=self.time.clock, **kw)

    def write(self, node_id=7, version=3, floor_ms=T - 1000, valid_until_ms=T + 10_000, **extra):
        doc = {"nodeId": node_id, "version": version, "floorMs": floor_ms, "validUntilMs": valid_until_ms}
        doc.update(extra)
        self.write_raw(json.dumps(doc).encode())

    def write_raw(self, data):
        with open(self.path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(self.path + ".tmp", self.path)

    def assertIncreasing(self, ids):
        self.assertEqual(ids, sorted(set(ids)))


class Rules(Base):
    def test_issues_under_the_claim(self):
        self.write()
        g = self.gen()
        self.assertEqual(decode(self.one(g)), (T, 7, 0))
        self.assertEqual(decode(self.one(g)), (T, 7, 1))
        self.time.advance(5)
        self.assertEqual(decode(self.one(g)), (T + 5, 7, 0))
        self.assertEqual(g.claim(), Claim(7, 3, T - 1000, T + 10_000))

    def test_valid_until(self):  # rule 1
        self.write(valid_until_ms=T + 2)
        g = self.gen(reread=3600)
        self.one(g)
        self.time.advance(1)
        self.assertEqual(decode(self.one(g)).time_ms, T + 1)
        self.time.advance(1)  # at validUntilMs: no longer
        with self.assertRaisesRegex(NotHeldError, "expired"):
            self.one(g)
        with self.assertRaisesRegex(NotHeldError, "expired"):
            g.claim()

    def test_expired_at_start(self):
        self.write(valid_until_ms=T)
        with self.assertRaisesRegex(NotHeldError, "expired"):
            self.one(self.gen())
        self.write(valid_until_ms=T + 1)  # a renewal: issues
        self.assertEqual(decode(self.one(self.gen())).node_id, 7)

    def test_renewal_read_when_the_cached_claim_expires(self):
        self.write(valid_until_ms=T + 10)
        g = self.gen(reread=3600)
        self.one(g)
        self.write(valid_until_ms=T + 5000)
        self.time.advance(20)
        self.assertEqual(decode(self.one(g)).time_ms, T + 20)
        self.assertEqual(g.claim().valid_until_ms, T + 5000)

    def test_reread_period(self):  # rule 2
        self.write()
        g = self.gen()
        self.one(g)
        os.remove(self.path)  # the broker fenced
        self.time.mono += 0.75
        self.one(g)  # read less than a second ago
        self.time.mono += 0.25
        with self.assertRaisesRegex(NotHeldError, "missing"):
            self.one(g)

    def test_version_change_is_for_good(self):  # rule 3
        self.write()
        g = self.gen(reread=0)
        self.one(g)
        self.write(version=4)
        with self.assertRaisesRegex(VersionChangedError, "version 4.*version 3"):
            self.one(g)
        self.write()  # the old claim back: still stopped
        for call in (lambda: self.one(g), lambda: g.next_ids(5), g.claim):
            with self.assertRaises(VersionChangedError):
                call()
        os.remove(self.path)
        with self.assertRaises(VersionChangedError):
            self.one(g)

    def test_node_change_is_for_good(self):
        self.write()
        g = self.gen(reread=0)
        g.claim()
        self.write(node_id=8)
        with self.assertRaises(VersionChangedError):
            self.one(g)

    def test_a_claim_never_used_pins_nothing(self):
        self.write(valid_until_ms=T)  # expired: never used
        g = self.gen(reread=0)
        with self.assertRaises(NotHeldError):
            self.one(g)
        self.write(version=4)
        self.assertEqual(g.claim().version, 4)

    def test_floor(self):  # rule 4
        self.write(floor_ms=T)  # the clock is at the floor: wait for the next ms
        g = self.gen()
        self.assertEqual(decode(self.one(g)), (T + 1, 7, 0))
        self.assertGreater(self.time.slept, 0)

    def test_clock_behind_the_floor(self):
        self.write(floor_ms=T + 60_000, valid_until_ms=T + 90_000)
        g = self.gen(max_clock_wait=5.0)
        start = self.time.mono
        with self.assertRaisesRegex(ClockBehindError, "behind the floor %d for 5 s" % (T + 60_000)):
            self.one(g)
        self.assertAlmostEqual(self.time.mono - start, 5.0, places=3)

    def test_clock_behind_the_floor_a_little(self):
        self.write(floor_ms=T + 3000)
        self.assertEqual(decode(self.one(self.gen())).time_ms, T + 3001)

    def test_step_back(self):
        self.write()
        g = self.gen()
        a = self.one(g)
        self.time.wall -= 10_000  # the host's clock steps back
        b = g.next_ids(4095)
        self.assertEqual(decode(b[-1]), (T, 7, 4095))
        self.assertIncreasing([a] + b)
        with self.assertRaisesRegex(ClockBehindError, "behind the last timestamp %d" % T):
            self.one(g)
        self.time.wall = T + 1
        self.assertEqual(decode(self.one(g)), (T + 1, 7, 0))

    def test_step_back_then_forward_again(self):
        self.write()
        g = self.gen()
        ids = [self.one(g)]
        self.time.advance(3)
        ids.append(self.one(g))
        self.time.wall -= 2
        ids.append(self.one(g))
        self.assertEqual([decode(i).time_ms for i in ids], [T, T + 3, T + 3])
        self.assertIncreasing(ids)

    def test_overflow_waits_for_the_next_ms(self):
        self.write()
        g = self.gen()
        ids = g.next_ids(4096)
        self.assertEqual(self.time.slept, 0)
        ids.append(self.one(g))
        self.assertEqual(decode(ids[-1]), (T + 1, 7, 0))
        self.assertGreater(self.time.slept, 0)
        self.assertIncreasing(ids)

    def test_missing_then_back(self):  # rule 5
        g = self.gen(reread=0)
        with self.assertRaisesRegex(NotHeldError, "missing") as e:
            self.one(g)
        self.assertIn(self.path, str(e.exception))
        self.write()
        a = self.one(g)
        os.remove(self.path)
        with self.assertRaisesRegex(NotHeldError, "missing"):
            self.one(g)
        self.write()  # the same claim is back
        self.assertIncreasing([a, self.one(g)])

    GARBAGE = {
        b"": "empty",
        b"  \n": "empty",
        b'{"nodeId":7,"version":3,"floo': "not JSON",
        b"{": "not JSON",
        b"\xff\xfe": "not JSON",
        b"[]": "not a JSON object",
        b"null": "not a JSON object",
        b'"x"': "not a JSON object",
        b'{"version":3,"floorMs":0,"validUntilMs":1900000000000}': "nodeId is missing",
        b'{"nodeId":7,"floorMs":0,"validUntilMs":1900000000000}': "version is missing",
        b'{"nodeId":7,"version":3,"validUntilMs":1900000000000}': "floorMs is missing",
        b'{"nodeId":7,"version":3,"floorMs":0}': "validUntilMs is missing",
        b'{"nodeId":"7","version":3,"floorMs":0,"validUntilMs":1900000000000}': "nodeId is not an integer",
        b'{"nodeId":7.0,"version":3,"floorMs":0,"validUntilMs":1900000000000}': "nodeId is not an integer",
        b'{"nodeId":true,"version":3,"floorMs":0,"validUntilMs":1900000000000}': "nodeId is not an integer",
        b'{"nodeId":null,"version":3,"floorMs":0,"validUntilMs":1900000000000}': "nodeId is not an integer",
        b'{"nodeId":7,"version":[3],"floorMs":0,"validUntilMs":1900000000000}': "version is not an integer",
        b'{"nodeId":7,"version":3,"floorMs":NaN,"validUntilMs":1900000000000}': "floorMs is not an integer",
        b'{"nodeId":7,"version":3,"floorMs":0,"validUntilMs":1.9e12}': "validUntilMs is not an integer",
        b'{"nodeId":-1,"version":3,"floorMs":0,"validUntilMs":1900000000000}': "nodeId is negative",
        b'{"nodeId":7,"version":-3,"floorMs":0,"validUntilMs":1900000000000}': "version is negative",
        b'{"nodeId":1024,"version":3,"floorMs":0,"validUntilMs":1900000000000}': "not below 1024",
        b'{"nodeId":7,"nodeId":8,"version":3,"floorMs":0,"validUntilMs":1900000000000}': "twice",
    }

    def test_garbage(self):
        g = self.gen(reread=0)
        for data, reason in self.GARBAGE.items():
            with self.subTest(data=data):
                self.write_raw(data)
                with self.assertRaisesRegex(NotHeldError, reason) as e:
                    self.one(g)
                self.assertIn(self.path, str(e.exception))
        self.write()  # never used a claim: any valid one will do
        self.assertEqual(decode(self.one(g)).node_id, 7)

    def test_garbage_after_use_then_back(self):
        self.write()
        g = self.gen(reread=0)
        a = self.one(g)
        self.write_raw(b'{"nodeId":7,')
        with self.assertRaisesRegex(NotHeldError, "not JSON"):
            self.one(g)
        self.write(extra="ignored")
        self.assertIncreasing([a, self.one(g)])

    def test_unreadable(self):
        os.mkdir(self.path)
        with self.assertRaisesRegex(NotHeldError, "unreadable"):
            self.one(self.gen())

    def test_first_ids_after_the_epoch(self):
        self.time.wall = 1735689600000  # 2025-01-01T00:00:00Z
        self.write(floor_ms=0, valid_until_ms=1735689600005)
        self.assertEqual(decode(self.one(self.gen())), (1735689600000, 7, 0))


class NextIdsOne(Rules):
    """Every rule again, through next_ids(1) (not next_id's short path)."""

    def one(self, gen):
        ids = gen.next_ids(1)
        self.assertEqual(len(ids), 1)
        return ids[0]


class Batches(Base):
    def test_a_batch_spans_milliseconds(self):  # rule 7
        self.write()
        g = self.gen()
        ids = g.next_ids(10000)
        self.assertEqual(len(ids), 10000)
        self.assertIncreasing(ids)
        self.assertEqual([decode(ids[i]) for i in (0, 4095, 4096, 8192, 9999)],
                         [(T, 7, 0), (T, 7, 4095), (T + 1, 7, 0), (T + 2, 7, 0), (T + 2, 7, 1807)])
        self.assertEqual(decode(g.next_id()), (T + 2, 7, 1808))

    def test_all_or_nothing(self):
        self.write(valid_until_ms=T + 2)
        g = self.gen()
        with self.assertRaisesRegex(NotHeldError, "expired"):
            g.next_ids(10000)  # needs T, T+1 and T+2
        self.time.wall = T  # nothing of the failed batch was issued
        self.assertEqual(decode(g.next_id()), (T, 7, 0))

    def test_all_or_nothing_when_the_file_goes(self):
        self.write()
        g = self.gen(reread=0)
        g.next_ids(4096)
        real_sleep = self.time.sleep

        def sleep_and_fence(s):
            os.remove(self.path) if os.path.exists(self.path) else None
            real_sleep(s)
        with mock.patch.object(_idfile, "_sleep", sleep_and_fence):
            with self.assertRaisesRegex(NotHeldError, "missing"):
                g.next_ids(10)

    def test_bad_counts(self):
        self.write()
        g = self.gen()
        for n, err in ((0, ValueError), (10001, ValueError), (-1, ValueError),
                       (True, TypeError), (1.0, TypeError), ("1", TypeError)):
            with self.subTest(n=n), self.assertRaises(err):
                g.next_ids(n)


class Mutations(Base):
    def test_unknown_mutation(self):
        with self.assertRaisesRegex(ValueError, "unknown mutation"):
            self.gen(_mutation="ignore-everything")

    def test_known_mutations_construct(self):
        for name in sorted(_idfile.MUTATIONS):
            self.gen(_mutation=name)


class Threads(unittest.TestCase):
    def test_no_duplicates(self):  # rule 6, on the real clocks
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "id.json")
            with open(path, "w") as f:
                json.dump({"nodeId": 5, "version": 1, "floorMs": 0, "validUntilMs": 2 ** 50}, f)
            g = IdFileGenerator(path)
            results = [[] for _ in range(8)]

            def work(out, batch):
                for _ in range(300):
                    out.extend(g.next_ids(batch) if batch > 1 else [g.next_id()])
            threads = [threading.Thread(target=work, args=(results[i], 1 if i % 2 else 37)) for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for r in results:
                self.assertEqual(r, sorted(set(r)))  # each thread sees its IDs increase
            every = [i for r in results for i in r]
            self.assertEqual(len(every), 4 * 300 + 4 * 300 * 37)
            self.assertEqual(len(set(every)), len(every))


if __name__ == "__main__":
    unittest.main()
