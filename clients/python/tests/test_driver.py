"""Tests of conformance/driver.py, run as CONFORMANCE.md runs it."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [HERE, os.path.join(HERE, "tests"), os.path.join(HERE, "conformance")]
import driver  # noqa: E402
from nodeid_client import decode  # noqa: E402
from test_http import Broker  # noqa: E402


def run(*args, stdin=subprocess.DEVNULL):
    """Runs the driver to its end: exit code, stdout lines, stderr."""
    p = subprocess.run([sys.executable, "-B", "conformance/driver.py", *args], cwd=HERE,
                       env=dict(os.environ, PYTHONPATH="."), stdin=stdin,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout.splitlines(), p.stderr


class DriverTest(unittest.TestCase):
    def setUp(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.path = os.path.join(d.name, "id.json")

    def write(self, **kw):
        now = time.time_ns() // 1_000_000
        doc = {"nodeId": 9, "version": 2, "floorMs": now - 1000, "validUntilMs": now + 600_000}
        doc.update(kw)
        with open(self.path, "w") as f:
            json.dump(doc, f)
        return doc

    def test_id_file(self):
        doc = self.write()
        code, lines, _ = run("--id-file", self.path, "--batch", "3", "--duration-ms", "200")
        self.assertEqual(code, 0)
        self.assertRegex(lines[-1], r"^done \d+ 0$")
        self.assertEqual(int(lines[-1].split()[1]), len(lines) - 1)
        ids = []
        for line in lines[:-1]:
            f = line.split()
            self.assertEqual(f[:4], ["ok", "9", "2", str(doc["validUntilMs"])])
            self.assertEqual(len(f), 7)
            ids += map(int, f[4:])
        self.assertEqual(ids, sorted(set(ids)))
        self.assertEqual({decode(i).node_id for i in ids}, {9})
        _, lines, _ = run("--id-file", self.path, "--duration-ms", "50")  # next_id
        self.assertRegex(lines[0], r"^ok 9 2 %d \d+$" % doc["validUntilMs"])
        self.assertGreater(int(lines[0].split()[4]), ids[-1])

    def test_errors_are_lines(self):
        code, lines, _ = run("--id-file", self.path, "--duration-ms", "50", "--pause-ms", "10")
        self.assertEqual(code, 0)
        self.assertRegex(lines[0], r"^err NotHeld nodeid: id file .* missing")
        calls = len(lines) - 1
        self.assertEqual(lines[-1], "done %d %d" % (calls, calls))

    def test_expired_is_not_held(self):
        self.write(validUntilMs=1)
        _, lines, _ = run("--id-file", self.path, "--duration-ms", "20")
        self.assertRegex(lines[0], r"^err NotHeld .*expired")

    def test_clock_steps(self):
        doc = self.write(floorMs=time.time_ns() // 1_000_000 - 60_000)
        _, lines, _ = run("--id-file", self.path, "--clock-steps", "0:-30000", "--duration-ms", "20")
        started = time.time_ns() // 1_000_000
        t = decode(int(lines[0].split()[4])).time_ms
        self.assertLess(started - 30_000 - 10_000, t)
        self.assertLess(t, started - 30_000)
        _, lines, _ = run("--id-file", self.path, "--clock-steps", "0:-1,0:+600000", "--duration-ms", "20")
        self.assertRegex(lines[0], r"^err NotHeld .*expired at %d" % doc["validUntilMs"])

    def test_http(self):
        broker = Broker()
        self.addCleanup(broker.stop)
        code, lines, _ = run("--url", broker.url, "--batch", "2", "--duration-ms", "100")
        self.assertEqual(code, 0)
        self.assertEqual(lines[0], "ok 7 3 - 1000 1001")
        broker.mode = "503"
        _, lines, _ = run("--url", broker.url, "--duration-ms", "20", "--pause-ms", "5")
        self.assertEqual(lines[0], "err Unavailable nodeid: the broker at %s serves no IDs now: "
                                   "nodeid: fenced" % broker.url)

    def test_stops_on_stdin_end_and_sigterm(self):
        self.write()
        for stop in ("stdin", "sigterm"):
            with self.subTest(stop=stop):
                p = subprocess.Popen([sys.executable, "-B", "conformance/driver.py", "--id-file", self.path,
                                      "--pause-ms", "5"], cwd=HERE, env=dict(os.environ, PYTHONPATH="."),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                self.assertTrue(p.stdout.readline().startswith("ok 9 2 "))  # it runs
                if stop == "stdin":
                    p.stdin.close()
                else:
                    p.send_signal(signal.SIGTERM)
                out = p.stdout.read()
                self.assertEqual(p.wait(timeout=30), 0)
                p.stdin.close()
                p.stdout.close()
                self.assertRegex(out.splitlines()[-1], r"^done \d+ 0$")

    def test_duration_ignores_stdin(self):
        self.write()
        p = subprocess.Popen([sys.executable, "-B", "conformance/driver.py", "--id-file", self.path,
                              "--duration-ms", "1000", "--pause-ms", "100"], cwd=HERE,
                             env=dict(os.environ, PYTHONPATH="."), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        p.stdin.close()  # at once: the driver goes on for its duration
        out = p.stdout.read()
        p.stdout.close()
        self.assertEqual(p.wait(timeout=30), 0)
        self.assertGreaterEqual(int(out.splitlines()[-1].split()[1]), 2)

    def test_bad_arguments(self):
        for args in ([], ["--id-file", "x", "--url", "http://x"], ["--id-file", "x", "--batch", "0"],
                     ["--id-file", "x", "--batch", "10001"], ["--id-file", "x", "--mutation", "nope"],
                     ["--id-file", "x", "--clock-steps", "1"], ["--id-file", "x", "--pause-ms", "-1"],
                     ["--url", "http://x", "--mutation", "ignore-floor"], ["--url", "nope"],
                     ["--id-file", "x", "--duration-ms", "x"]):
            with self.subTest(args=args):
                code, lines, err = run(*args)
                self.assertEqual(code, 2)
                self.assertEqual(lines, [])
                self.assertIn("error", err)

    def test_parse_steps(self):
        self.assertEqual(driver.parse_steps("2000:+1500,0:-3000"), [(0, -3000), (2000, 1500)])
        self.assertEqual(driver.parse_steps(""), [])
        for bad in ("1", "-1:5", "a:1", "1:b"):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                driver.parse_steps(bad)

    def test_stepped_clock(self):
        start = time.monotonic()
        clock = driver.stepped_clock([(0, -3000), (3_600_000, 7)], start)
        self.assertLess(abs(clock() - (time.time_ns() // 1_000_000 - 3000)), 1000)


if __name__ == "__main__":
    unittest.main()
