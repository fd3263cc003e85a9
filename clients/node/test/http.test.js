// Tests of HttpGenerator against a local http.createServer playing the broker.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';

import { HttpGenerator, decode, UnavailableError, NodeIdError } from '../index.js';

const T0 = 1_800_000_000_000;
let server, base;
let mode = 'ok'; // how the fake broker answers
let connections = 0;
let version = 9; // of the fake broker's answers
const requests = []; // the fake broker's request paths
let next = ((BigInt(T0) - 1735689600000n) << 22n) | (5n << 12n);

before(async () => {
  server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    requests.push(req.url);
    const send = (code, body, headers = {}) => {
      res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
      res.end(typeof body === 'string' ? body : JSON.stringify(body) + '\n');
    };
    if (u.pathname !== '/ids' && u.pathname !== '/p/ids') return send(404, { status: 'not_found', reason: u.pathname });
    const n = Number(u.searchParams.get('n') ?? 1);
    switch (mode) {
      case 'ok': {
        const ids = [];
        for (let i = 0; i < n; i++) ids.push(String(next++));
        return send(200, `{"nodeId":5,"version":${version},"ids":[${ids.map((s) => `"${s}"`).join(',')}]}\n`);
      }
      case '503':
        return send(503, { status: 'unavailable', reason: 'node ID not held: fenced' }, { 'Retry-After': '1' });
      case '400':
        return send(400, { status: 'bad_request', reason: `n=${n} is out of range` });
      case 'short':
        return send(200, { nodeId: 5, version: 9, ids: ['1'] });
      case 'hex':
        return send(200, { nodeId: 5, version: 9, ids: Array(n).fill('0x10') });
      case 'html':
        return send(502, '<html>bad gateway</html>');
      case 'hang':
        return; // never answers
    }
  });
  server.on('connection', () => connections++);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

test('200: IDs as bigints, and one socket for many calls', async () => {
  mode = 'ok';
  const g = new HttpGenerator(base);
  const before = connections;
  const a = await g.nextId();
  assert.equal(typeof a, 'bigint');
  assert.deepEqual(decode(a), { timeMs: T0, nodeId: 5, seq: Number(a & 4095n) });
  const ids = await g.nextIds(10000);
  assert.equal(ids.length, 10000);
  assert.ok(ids[0] > a && ids.every((id, i) => i === 0 || id > ids[i - 1]));
  for (let i = 0; i < 50; i++) await g.nextIds(3);
  assert.deepEqual(await g.nextBatch(2).then((r) => [r.nodeId, r.version, r.ids.length]), [5, 9, 2]);
  assert.equal(connections - before, 1, 'keep-alive: one connection');
  g.close();
});

test('a base URL with a path and a trailing slash', async () => {
  mode = 'ok';
  const g = new HttpGenerator(`${base}/p/`);
  assert.equal((await g.nextIds(2)).length, 2);
  g.close();
});

test('503: UnavailableError with the broker reason', async () => {
  mode = '503';
  const g = new HttpGenerator(base);
  await assert.rejects(g.nextId(), (e) => e instanceof UnavailableError && e instanceof NodeIdError && e.name === 'UnavailableError' && /fenced/.test(e.message) && e.retryAfterMs === 1000);
  g.close();
});

test('other answers: NodeIdError', async () => {
  const g = new HttpGenerator(base);
  for (const [m, re] of [['400', /HTTP 400: n=3 is out of range/], ['short', /not an answer with 3 IDs/], ['hex', /not a decimal string/], ['html', /HTTP 502: <html>/]]) {
    mode = m;
    await assert.rejects(g.nextIds(3), (e) => e instanceof NodeIdError && !(e instanceof UnavailableError) && re.test(e.message), m);
  }
  await assert.rejects(g.nextIds(0), RangeError);
  await assert.rejects(g.nextIds(10001), RangeError);
  g.close();
});

test('a broker that does not answer: NodeIdError after timeoutMs', async () => {
  mode = 'hang';
  const g = new HttpGenerator(base, { timeoutMs: 100 });
  const start = performance.now();
  await assert.rejects(g.nextId(), (e) => e.name === 'NodeIdError' && /timed out after 100 ms/.test(e.message));
  assert.ok(performance.now() - start >= 99);
  g.close();
});

test('no broker: NodeIdError', async () => {
  const s = http.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${s.address().port}`;
  await new Promise((r) => s.close(r)); // a port nobody listens on now
  const g = new HttpGenerator(url);
  await assert.rejects(g.nextId(), (e) => e.name === 'NodeIdError' && /ECONNREFUSED/.test(e.message));
  g.close();
  assert.throws(() => new HttpGenerator('https://x'), TypeError);
});

test('a kept-alive socket the broker closed does not fail the next call', async () => {
  mode = 'ok';
  const g = new HttpGenerator(base);
  await g.nextId();
  server.closeIdleConnections(); // the broker drops the idle socket
  assert.equal(typeof (await g.nextId()), 'bigint');
  g.close();
});

test('close() with a request in flight: it rejects, and is not sent again', async () => {
  mode = 'ok';
  const g = new HttpGenerator(base, { timeoutMs: 60_000 });
  await g.nextId(); // the next request goes out on this kept-alive socket
  mode = 'hang';
  const from = requests.length;
  const pending = g.nextId();
  while (requests.length === from) await new Promise((r) => setImmediate(r)); // the broker has it
  g.close();
  await assert.rejects(pending, (e) => e.name === 'NodeIdError' && /closed while the request was in flight/.test(e.message));
  assert.equal(requests.length - from, 1, 'sent once'); // a resend would come before the rejection
  mode = 'ok';
  assert.equal(typeof (await g.nextId()), 'bigint', 'usable after close');
  g.close();
});

test('the base URL or the /ids URL, given or from NODEID_URL', async () => {
  mode = 'ok';
  const from = requests.length;
  for (const url of [base, `${base}/`, `${base}/ids`, `${base}/ids/`, new URL(`${base}/ids`)]) {
    const g = new HttpGenerator(url);
    await g.nextId();
    g.close();
  }
  const saved = process.env.NODEID_URL;
  try {
    for (const url of [base, `${base}/ids`]) {
      process.env.NODEID_URL = url;
      const g = new HttpGenerator();
      const b = await g.nextBatch(2);
      assert.deepEqual([b.nodeId, b.version, b.ids.length, b.claim], [5, 9, 2, null]);
      g.close();
    }
    delete process.env.NODEID_URL;
    assert.throws(() => new HttpGenerator(), (e) => e instanceof TypeError && /NODEID_URL is not set/.test(e.message));
  } finally {
    if (saved === undefined) delete process.env.NODEID_URL;
    else process.env.NODEID_URL = saved;
  }
  assert.deepEqual(requests.slice(from), [...Array(5).fill('/ids?n=1'), '/ids?n=2', '/ids?n=2']);
});

// The monotonic clock of the prefetch tests' generators: only they move it.
let mono = 0;
const clock = () => mono;

// settle lets the event loop run until cond holds (bounded).
async function settle(cond) {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 1));
  assert.ok(cond(), 'the condition did not hold within 2 s');
}

test('prefetch: one round trip per batch, fetched ahead at half', async () => {
  mode = 'ok';
  const g = new HttpGenerator(base, { prefetch: 10, _now: clock });
  const from = requests.length;
  const got = [];
  for (let i = 0; i < 5; i++) got.push(await g.nextId());
  await settle(() => requests.length - from >= 2);
  assert.deepEqual(requests.slice(from), ['/ids?n=10', '/ids?n=10'], 'the next batch is asked for at half');
  for (let i = 0; i < 6; i++) got.push(await g.nextId());
  assert.ok(got.every((id, i) => i === 0 || id > got[i - 1]));
  assert.equal(requests.length - from, 2, 'eleven IDs, two answers');
  g.close();
});

test('prefetch: a batch comes from one answer, with its version', async () => {
  mode = 'ok';
  version = 9;
  const g = new HttpGenerator(base, { prefetch: 10, _now: clock });
  try {
    const a = await g.nextBatch(4);
    version = 10; // the next answer's
    const b = await g.nextBatch(4); // 8 used: the next one is fetched
    assert.deepEqual([a.version, b.version, b.ids[0] - a.ids[3]], [9, 9, 1n]);
    const c = await g.nextBatch(4); // 2 left of the first answer: skipped
    assert.deepEqual([c.version, c.nodeId, c.claim], [10, 5, null]);
    assert.equal(c.ids[0] - b.ids[3], 3n);
    const big = await g.nextIds(20); // more than prefetch: fetched as one answer
    assert.equal(big.length, 20);
    assert.ok(big[0] > c.ids[3]);
  } finally {
    version = 9;
    g.close();
  }
});

test('prefetch: what is left stays good when the broker fails; then its error', async () => {
  mode = 'ok';
  const g = new HttpGenerator(base, { prefetch: 4, _now: clock });
  const first = await g.nextId();
  mode = '503';
  const got = [await g.nextId()]; // 2 used: the fetch ahead answers 503
  got.push(await g.nextId(), await g.nextId());
  assert.deepEqual(got, [first + 1n, first + 2n, first + 3n]);
  await assert.rejects(g.nextId(), UnavailableError);
  mode = 'ok';
  assert.ok((await g.nextId()) > first + 3n);
  g.close();
});

test('prefetch: concurrent calls share the batches without a duplicate', async () => {
  mode = 'ok';
  const g = new HttpGenerator(base, { prefetch: 7, _now: clock });
  const all = (await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? g.nextIds(3) : g.nextId().then((x) => [x]))))).flat();
  assert.equal(new Set(all).size, all.length);
  g.close();
  assert.throws(() => new HttpGenerator(base, { prefetch: 10001, _now: clock }), RangeError);
  assert.throws(() => new HttpGenerator(base, { _mutation: 'ignore-floor' }), RangeError);
});

test('prefetchMaxAge (default 1000 ms): a call skips a batch fetched longer ago', async () => {
  mode = 'ok';
  const g = new HttpGenerator(base, { prefetch: 10, _now: clock });
  const from = requests.length;
  const a = await g.nextId();
  mono += 1000; // as old as the max age: still used
  assert.equal(await g.nextId(), a + 1n);
  mono += 0.001; // older: the next ID is from a new fetch
  assert.equal(await g.nextId(), a + 10n);
  assert.deepEqual(requests.slice(from), ['/ids?n=10', '/ids?n=10']);
  assert.deepEqual(await g.nextIds(2), [a + 11n, a + 12n], 'the new batch in use');
  assert.equal(requests.length - from, 2);
  g.close();
});

test('prefetchMaxAge: a batch fetched ahead longer ago is skipped too', async () => {
  mode = 'ok';
  const g = new HttpGenerator(base, { prefetch: 10, prefetchMaxAge: 500, _now: clock });
  const from = requests.length;
  const a = (await g.nextIds(5))[0]; // half: the next batch fetched ahead at mono
  await settle(() => requests.length - from >= 2);
  mono += 500;
  assert.equal((await g.nextIds(5))[0], a + 5n);
  assert.equal((await g.nextIds(5))[0], a + 10n, 'the batch fetched ahead: young enough');
  // The next fetched ahead, 500 ms later: the fake broker has issued its IDs
  // (whether its answer is in yet or not, it is too old below).
  await settle(() => requests.length - from >= 3);
  mono += 600; // both batches too old
  assert.equal(await g.nextId(), a + 30n);
  assert.equal(requests.length - from, 4);
  g.close();
});

test('prefetchMaxAge: a call does not wait for a fetch sent too long ago', async () => {
  mode = 'ok';
  const g = new HttpGenerator(base, { prefetch: 10, _now: clock });
  const from = requests.length;
  const a = (await g.nextIds(4))[0];
  mode = 'hang';
  assert.equal(await g.nextId(), a + 4n); // half: the fetch ahead, which hangs
  await settle(() => requests.length - from >= 2);
  mode = 'ok';
  mono += 1500;
  assert.equal(await g.nextId(), a + 10n, 'from a new fetch, not the one sent 1.5 s ago');
  assert.equal(requests.length - from, 3);
  g.close(); // ends the hung request on its kept-alive socket (not sent again)
});

test('prefetchMaxAge null: no limit', async () => {
  mode = 'ok';
  const g = new HttpGenerator(base, { prefetch: 10, prefetchMaxAge: null, _now: clock });
  const from = requests.length;
  const a = await g.nextId();
  mono += 86_400_000;
  assert.deepEqual(await g.nextIds(4), [a + 1n, a + 2n, a + 3n, a + 4n]);
  await settle(() => requests.length - from >= 2);
  mono += 86_400_000;
  assert.equal((await g.nextIds(6))[0], a + 10n, '5 left of the first: skipped');
  assert.equal(requests.length - from, 2);
  g.close();
  for (const bad of [0, -1, Infinity, NaN, '1', true]) {
    assert.throws(() => new HttpGenerator(base, { prefetch: 10, prefetchMaxAge: bad }), RangeError, String(bad));
  }
});
