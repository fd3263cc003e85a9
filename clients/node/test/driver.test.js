// Tests of the conformance driver (conformance/driver.mjs) as a child process.

import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const driver = fileURLToPath(new URL('../conformance/driver.mjs', import.meta.url));
let dir, path;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'nodeid-driver-'));
  path = join(dir, 'id.json');
  writeFileSync(path, JSON.stringify({ nodeId: 7, version: 3, floorMs: Date.now() - 1000, validUntilMs: Date.now() + 60_000 }));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const run = (args, opts = {}) => spawnSync(process.execPath, [driver, ...args], { encoding: 'utf8', maxBuffer: 1 << 28, ...opts });

// check checks the lines of a run: ok lines with increasing IDs, err lines,
// and a done line that counts them.
function check(stdout) {
  const lines = stdout.trimEnd().split('\n');
  const done = lines.pop().split(' ');
  assert.equal(done[0], 'done');
  assert.equal(+done[1], lines.length);
  assert.equal(+done[2], lines.filter((l) => l.startsWith('err ')).length);
  let last = -1n;
  for (const l of lines) {
    if (l.startsWith('err ')) {
      assert.match(l, /^err (NotHeld|VersionChanged|ClockBehind|Unavailable|Other) \S/);
      continue;
    }
    const [ok, , , , ...ids] = l.split(' ');
    assert.equal(ok, 'ok');
    for (const id of ids.map(BigInt)) {
      assert.ok(id > last, l);
      last = id;
    }
  }
  return lines;
}

test('id-file mode: ok lines with the claim, and done after --duration-ms', () => {
  const r = run(['--id-file', path, '--duration-ms', '200', '--batch', '3']);
  assert.equal(r.status, 0, r.stderr);
  const lines = check(r.stdout);
  assert.ok(lines.length > 10);
  for (const l of lines) assert.match(l, /^ok 7 3 \d{13} \d+ \d+ \d+$/);
});

test('id-file mode: --clock-steps moves the clock past validUntilMs', () => {
  const r = run(['--id-file', path, '--duration-ms', '50', '--clock-steps', '0:+120000']);
  assert.equal(r.status, 0, r.stderr);
  const lines = check(r.stdout);
  assert.ok(lines.length > 0 && lines.every((l) => /^err NotHeld .*expired/.test(l)), lines[0]);
});

test('id-file mode: a missing file is err NotHeld', () => {
  rmSync(path);
  const r = run(['--id-file', path, '--duration-ms', '30', '--pause-ms', '5', '--reread-ms', '0']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(check(r.stdout).every((l) => l.startsWith('err NotHeld ') && l.includes(path)));
});

test('stops on SIGTERM and on the end of standard input', async () => {
  for (const how of ['SIGTERM', 'stdin']) {
    const child = spawn(process.execPath, [driver, '--id-file', path], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (s) => (out += s));
    while (!out.includes('\n')) await once(child.stdout, 'data'); // running
    if (how === 'SIGTERM') child.kill('SIGTERM');
    else child.stdin.end();
    const [code] = await once(child, 'exit');
    if (!child.stdout.readableEnded) await once(child.stdout, 'end');
    assert.equal(code, 0, how);
    assert.ok(check(out).length > 0, how);
  }
});

test('bad arguments exit 2 with the reason', () => {
  for (const args of [[], ['--id-file', path, '--url', 'http://x'], ['--id-file', path, '--batch', '0'], ['--id-file', path, '--batch', '10001'],
    ['--id-file', path, '--mutation', 'nope'], ['--url', 'http://127.0.0.1:1', '--mutation', 'ignore-floor'], ['--id-file', path, '--clock-steps', '5'],
    ['--id-file', path, '--bogus'], ['--id-file', path, 'extra'], ['--id-file', path, '--duration-ms', '-1']]) {
    const r = run(args);
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, /^driver: /, args.join(' '));
    assert.equal(r.stdout, '');
  }
});

test('HTTP mode: ok lines with "-", err Unavailable on 503', async () => {
  let fail = false;
  let next = 1000n;
  const server = http.createServer((req, res) => {
    if (fail) {
      res.writeHead(503, { 'Retry-After': '1' }).end('{"status":"unavailable","reason":"fenced"}\n');
      return;
    }
    const n = Number(new URL(req.url, 'http://x').searchParams.get('n'));
    const ids = Array.from({ length: n }, () => `"${next++}"`);
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(`{"nodeId":4,"version":2,"ids":[${ids}]}\n`);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}`;
  const go = () =>
    new Promise((resolve) => {
      const c = spawn(process.execPath, [driver, '--url', url, '--batch', '2', '--duration-ms', '150', '--pause-ms', '10'], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      c.stdout.setEncoding('utf8').on('data', (s) => (out += s));
      c.on('close', (code) => resolve({ code, out }));
    });
  let r = await go();
  assert.equal(r.code, 0);
  assert.ok(check(r.out).every((l) => /^ok 4 2 - \d+ \d+$/.test(l)));
  fail = true;
  r = await go();
  assert.ok(check(r.out).every((l) => /^err Unavailable .*fenced/.test(l)));
  server.closeAllConnections();
  server.close();
});
