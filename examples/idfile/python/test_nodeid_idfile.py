"""Tests of nodeid_idfile (python3 -m unittest, from test/all.sh)."""

import json
import os
import tempfile
import unittest

from nodeid_idfile import IDFile, Claim, parse


class FakeClock:
    def __init__(self, t):
        self.t = t

    def __call__(self):
        return self.t


def write(path, node_id, version, valid_until_ms):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"nodeId": node_id, "version": version, "validUntilMs": valid_until_ms}, f)
    os.replace(tmp, path)


class IDFileTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "id.json")
        self.clock = FakeClock(1_800_000_000.0)
        self.ids = IDFile(self.path, clock=self.clock)

    def tearDown(self):
        self.dir.cleanup()

    def test_valid_until(self):
        write(self.path, 7, 3, 1_800_000_002_000)
        self.assertEqual(self.ids.claim(), Claim(7, 3, 1_800_000_002_000))
        self.assertEqual(self.ids.node_id(), 7)
        self.clock.t += 1.999
        self.assertEqual(self.ids.node_id(), 7)
        self.clock.t += 0.001  # at validUntilMs: no longer
        self.assertIsNone(self.ids.node_id())

    def test_renewal_extends(self):
        write(self.path, 7, 3, 1_800_000_002_000)
        self.assertEqual(self.ids.node_id(), 7)
        write(self.path, 7, 3, 1_800_000_005_000)  # a renewal
        self.clock.t += 2.5  # past the first validUntilMs: the re-read has the later one
        self.assertEqual(self.ids.claim().valid_until_ms, 1_800_000_005_000)
        self.assertEqual(self.ids.node_id(), 7)

    def test_reread_period(self):
        write(self.path, 7, 3, 1_800_000_010_000)
        self.assertEqual(self.ids.node_id(), 7)
        os.remove(self.path)  # the broker fenced
        self.clock.t += 0.999
        self.assertEqual(self.ids.node_id(), 7)  # read less than a second ago
        self.clock.t += 0.001
        self.assertIsNone(self.ids.node_id())  # re-read: gone

    def test_clock_back_rereads(self):
        write(self.path, 7, 3, 1_800_000_010_000)
        self.assertEqual(self.ids.node_id(), 7)
        os.remove(self.path)
        self.clock.t -= 5
        self.assertIsNone(self.ids.node_id())

    def test_version_change_is_a_new_claim(self):
        write(self.path, 7, 3, 1_800_000_010_000)
        first = self.ids.claim()
        write(self.path, 7, 4, 1_800_000_020_000)
        self.clock.t += 1
        self.assertEqual(self.ids.claim().version, 4)
        self.assertNotEqual(self.ids.claim().version, first.version)

    def test_missing_or_garbage(self):
        self.assertIsNone(self.ids.claim())
        for data in [b"", b"{", b"[]", b'{"nodeId":7,"version":3}', b'{"nodeId":"7","version":3,"validUntilMs":1}',
                     b'{"nodeId":true,"version":3,"validUntilMs":1900000000000}',
                     b'{"nodeId":-1,"version":3,"validUntilMs":1900000000000}']:
            self.assertIsNone(parse(data), data)

    def test_parse_the_brokers_file(self):
        self.assertEqual(parse(b'{"nodeId":0,"version":1,"validUntilMs":1795612882433}\n'), Claim(0, 1, 1795612882433))



class FloorTest(unittest.TestCase):
    def test_floor_ms(self):
        c = parse(json.dumps({"nodeId": 7, "version": 3, "floorMs": 1_800_000_000_500, "validUntilMs": 1_800_000_002_000}).encode())
        self.assertEqual(c.floor_ms, 1_800_000_000_500)
        self.assertEqual(parse(b'{"nodeId":7,"version":3,"validUntilMs":1}').floor_ms, 0)  # a broker that writes none
        self.assertIsNone(parse(b'{"nodeId":7,"version":3,"validUntilMs":1,"floorMs":-1}'))

if __name__ == "__main__":
    unittest.main()
