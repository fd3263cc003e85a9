// Tests of HttpGenerator against a local http.createServer playing the broker.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';

import { HttpGenerator, decode, UnavailableError, NodeIdError } from '../index.js';

const T0 = 1_800_000_000_000;
let server, base;
let mode = 'ok'; // how the fake broker answers
let connections = 0;
let next = ((BigInt(T0) - 1735689600000n) << 22n) | (5n << 12n);

before(async () => {
  server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
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
        return send(200, `{"nodeId":5,"version":9,"ids":[${ids.map((s) => `"${s}"`).join(',')}]}\n`);
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
  assert.deepEqual(await g._nextIdsWithClaim(2).then((r) => [r.nodeId, r.version, r.ids.length]), [5, 9, 2]);
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
