// Tests of IdFileGenerator: every rule of clients/README.md on a fake clock
// and temporary id files. NODEID_TEST_MUTATION=NAME runs them with that
// mutation (test/mutations.test.js checks each makes some test fail).

import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { IdFileGenerator, decode, NotHeldError, VersionChangedError, ClockBehindError, NodeIdError } from '../index.js';

const MUTATION = process.env.NODEID_TEST_MUTATION || undefined;
const T0 = 1_800_000_000_000;

let dir, path, now;
const clock = () => now;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'nodeid-client-'));
  path = join(dir, 'id.json');
  now = T0;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

// write writes the id file atomically, as the broker does.
function write(doc) {
  writeFileSync(path + '.tmp', typeof doc === 'string' ? doc : JSON.stringify(doc));
  renameSync(path + '.tmp', path);
}
const claim = (over = {}) => ({ nodeId: 7, version: 3, floorMs: T0 - 10_000, validUntilMs: T0 + 10_000, ...over });
const gen = (opts = {}) => new IdFileGenerator(path, { clock, rereadMs: 0, maxClockWaitMs: 30, _mutation: MUTATION, ...opts });
const increasing = (ids) => ids.every((id, i) => i === 0 || id > ids[i - 1]);

// sleepAtLeast blocks for at least ms on the monotonic clock.
function sleepAtLeast(ms) {
  const end = performance.now() + ms;
  const cell = new Int32Array(new SharedArrayBuffer(4));
  while (performance.now() < end) Atomics.wait(cell, 0, 0, end - performance.now() + 1);
}

test('issues IDs with the claim and the clock, and claim() returns it frozen', () => {
  write(claim());
  const g = gen();
  const id = g.nextId();
  assert.equal(typeof id, 'bigint');
  assert.deepEqual(decode(id), { timeMs: T0, nodeId: 7, seq: 0 });
  assert.deepEqual(decode(g.nextId()), { timeMs: T0, nodeId: 7, seq: 1 });
  now += 5;
  assert.deepEqual(decode(g.nextId()), { timeMs: T0 + 5, nodeId: 7, seq: 0 });
  const c = g.claim();
  assert.deepEqual(c, claim());
  assert.ok(Object.isFrozen(c));
});

test('decode splits the layout', () => {
  const id = ((BigInt(T0) - 1735689600000n) << 22n) | (1023n << 12n) | 4095n;
  assert.deepEqual(decode(id), { timeMs: T0, nodeId: 1023, seq: 4095 });
  assert.deepEqual(decode(id.toString()), { timeMs: T0, nodeId: 1023, seq: 4095 });
  assert.throws(() => decode(-1n), RangeError);
  assert.throws(() => decode(1n << 63n), RangeError);
});

test('nextIds returns exactly n increasing IDs, and refuses a bad n', () => {
  write(claim());
  let t = T0; // a clock one ms later at each reading
  const g = gen({ clock: () => t++ });
  for (const n of [1, 2, 4096, 10000]) {
    const ids = g.nextIds(n);
    assert.equal(ids.length, n);
    assert.ok(increasing(ids));
  }
  for (const n of [0, -1, 10001, 1.5, NaN, '3', undefined]) assert.throws(() => g.nextIds(n), RangeError, String(n));
});

test('rule 1: issues only below validUntilMs', () => {
  write(claim({ validUntilMs: T0 + 2 }));
  const g = gen();
  now = T0 + 1;
  assert.deepEqual(decode(g.nextId()).timeMs, T0 + 1);
  now = T0 + 2;
  assert.throws(() => g.nextId(), (e) => e instanceof NotHeldError && /expired/.test(e.message) && e.message.includes(path));
  assert.throws(() => g.claim(), NotHeldError);
  assert.throws(() => g.nextIds(3), NotHeldError);
});

test('rule 1: a claim already expired is not held, and not the claim used', () => {
  write(claim({ validUntilMs: T0 }));
  const g = gen();
  assert.throws(() => g.nextId(), /expired/);
  write(claim({ version: 4 })); // a later claim, the first one used: no version change
  assert.equal(decode(g.nextId()).nodeId, 7);
  assert.equal(g.claim().version, 4);
});

test('rule 1: a batch that would cross validUntilMs issues nothing', () => {
  write(claim({ validUntilMs: T0 + 1 }));
  const g = gen();
  const times = [T0, T0, T0 + 1]; // 4096 IDs at T0, then the clock moves on
  const g2 = new IdFileGenerator(path, { clock: () => times.shift() ?? T0 + 1, rereadMs: 0, maxClockWaitMs: 30, _mutation: MUTATION });
  assert.throws(() => g2.nextIds(5000), NotHeldError);
  // nothing was committed: the same generator issues from sequence 0 again
  now = T0;
  assert.deepEqual(decode(g.nextIds(4096)[0]), { timeMs: T0, nodeId: 7, seq: 0 });
});

test('rule 2: a renewal is picked up when the cached claim expires', () => {
  write(claim({ validUntilMs: T0 + 5 }));
  const g = gen({ rereadMs: 60_000 });
  g.nextId();
  write(claim({ validUntilMs: T0 + 50 }));
  now = T0 + 20; // past the cached validUntilMs: re-read at once
  assert.equal(decode(g.nextId()).timeMs, T0 + 20);
  assert.equal(g.claim().validUntilMs, T0 + 50);
});

test('rule 2: re-reads the file once its reading is rereadMs old', () => {
  write(claim());
  const g = gen({ rereadMs: 60_000 });
  g.nextId();
  rmSync(path);
  g.nextId(); // read less than rereadMs ago: still the cached claim
  const h = gen({ rereadMs: 20 });
  write(claim());
  h.nextId();
  rmSync(path);
  sleepAtLeast(25);
  assert.throws(() => h.nextId(), (e) => e instanceof NotHeldError && /missing/.test(e.message));
});

test('rule 3: another version or nodeId stops the generator for good', () => {
  for (const other of [{ version: 4 }, { nodeId: 8 }]) {
    write(claim());
    const g = gen();
    g.nextId();
    write(claim(other));
    assert.throws(() => g.nextId(), (e) => e instanceof VersionChangedError && e.name === 'VersionChangedError' && e.message.includes(path));
    write(claim()); // the old claim is back: still stopped
    assert.throws(() => g.nextId(), VersionChangedError);
    assert.throws(() => g.nextIds(5), VersionChangedError);
    assert.throws(() => g.claim(), VersionChangedError);
  }
});

test('rule 4: issues only above floorMs, waiting for the clock', () => {
  write(claim({ floorMs: T0 + 3 }));
  let t = T0; // a clock one ms later at each reading
  const g = gen({ clock: () => t++, maxClockWaitMs: 5000 });
  const p = decode(g.nextId());
  assert.ok(p.timeMs > T0 + 3, `${p.timeMs}`);
  now = T0 + 3; // a clock stuck at the floor: ClockBehindError after maxClockWaitMs
  const h = gen({ maxClockWaitMs: 30 });
  const start = performance.now();
  assert.throws(() => h.nextId(), (e) => e instanceof ClockBehindError && /floorMs/.test(e.message));
  assert.ok(performance.now() - start >= 29);
  assert.equal(h.claim().floorMs, T0 + 3); // claim() does not wait
});

test('rule 4: a clock stepped back issues after the last timestamp', () => {
  write(claim());
  const g = gen();
  now = T0 + 100;
  const a = g.nextId();
  now = T0; // stepped back 100 ms
  const ids = [a, g.nextId(), ...g.nextIds(100)];
  assert.ok(increasing(ids));
  assert.deepEqual(decode(ids[1]), { timeMs: T0 + 100, nodeId: 7, seq: 1 });
  assert.deepEqual(decode(ids.at(-1)), { timeMs: T0 + 100, nodeId: 7, seq: 101 });
});

test('rule 4: a millisecond used up waits for the next one', () => {
  write(claim());
  const times = [T0, T0, T0, T0 + 1]; // the clock moves on after the generator waited
  const g = gen({ clock: () => times.shift() ?? T0 + 1, maxClockWaitMs: 5000 });
  const ids = g.nextIds(5000);
  assert.ok(increasing(ids));
  assert.deepEqual(decode(ids[4095]), { timeMs: T0, nodeId: 7, seq: 4095 });
  assert.deepEqual(decode(ids[4096]), { timeMs: T0 + 1, nodeId: 7, seq: 0 });
  assert.equal(times.length, 0, 'the clock was read again after the wait');
});

test('rule 4: a clock that stays behind raises ClockBehindError, and all IDs later are above', () => {
  write(claim());
  const g = gen();
  now = T0 + 100;
  g.nextIds(4000);
  now = T0; // stepped back, and the last millisecond has 96 sequence numbers left
  assert.throws(() => g.nextIds(97), (e) => e instanceof ClockBehindError && /behind the last/.test(e.message));
  const ids = g.nextIds(96); // the failed batch took none of them
  assert.deepEqual(decode(ids[95]), { timeMs: T0 + 100, nodeId: 7, seq: 4095 });
  assert.throws(() => g.nextId(), ClockBehindError);
  now = T0 + 101;
  assert.deepEqual(decode(g.nextId()), { timeMs: T0 + 101, nodeId: 7, seq: 0 });
});

test('rule 5: a missing file is NotHeld, and it resumes when the same claim is back', () => {
  const g = gen();
  assert.throws(() => g.nextId(), (e) => e instanceof NotHeldError && e.name === 'NotHeldError' && e.message.includes(path) && /missing/.test(e.message));
  write(claim());
  const a = g.nextId();
  rmSync(path);
  assert.throws(() => g.nextId(), /missing/);
  assert.throws(() => g.claim(), NotHeldError);
  write(claim({ validUntilMs: T0 + 20_000 })); // renewed meanwhile
  const b = g.nextId();
  assert.ok(b > a);
});

test('rule 5: garbage is NotHeld with the reason, and never guessed at', () => {
  write(claim());
  const g = gen();
  let last = g.nextId();
  const good = claim();
  const forms = {
    '': /empty/,
    '   \n': /empty/,
    '{"nodeId":7,"version":3,"floorMs":17': /not JSON/,
    '{': /not JSON/,
    nul: /not JSON/,
    null: /not a JSON object/,
    '[]': /not a JSON object/,
    '[7,3,0,1]': /not a JSON object/,
    7: /not a JSON object/,
    '"x"': /not a JSON object/,
  };
  for (const f of ['nodeId', 'version', 'floorMs', 'validUntilMs']) {
    const { [f]: _, ...rest } = good;
    forms[JSON.stringify(rest)] = new RegExp(`${f} is missing`);
    for (const bad of ['"7"', 'true', 'null', '1.5', '{}', '[1]', '1e300', String(2 ** 53)]) {
      forms[JSON.stringify(good).replace(new RegExp(`"${f}":\\d+`), `"${f}":${bad}`)] = new RegExp(`${f} is not a safe integer`);
    }
    forms[JSON.stringify({ ...good, [f]: -1 })] = new RegExp(`${f} is negative`);
  }
  forms[JSON.stringify({ ...good, nodeId: 1024 })] = /nodeId is above 1023/;
  for (const [text, reason] of Object.entries(forms)) {
    write(text);
    assert.throws(() => g.nextId(), (e) => e instanceof NotHeldError && reason.test(e.message) && e.message.includes(path), text);
    write(claim());
    const id = g.nextId();
    assert.ok(id > last, text);
    last = id;
  }
  rmSync(path);
  mkdirSync(path); // unreadable
  assert.throws(() => g.nextId(), (e) => e instanceof NotHeldError && /unreadable/.test(e.message));
});

test('rule 5: extra fields are ignored', () => {
  write({ ...claim(), note: 'x' });
  assert.equal(decode(gen().nextId()).nodeId, 7);
});

test('a claim whose floor leaves no time is NotHeld at once', () => {
  write(claim({ floorMs: T0 + 10, validUntilMs: T0 + 11 }));
  assert.throws(() => gen({ maxClockWaitMs: 5000 }).nextId(), /no time left/);
});

test('the options are checked', () => {
  assert.throws(() => new IdFileGenerator(path, { _mutation: 'ignore-everything' }), /unknown mutation/);
  assert.throws(() => new IdFileGenerator(path, { rereadMs: -1 }), RangeError);
  assert.throws(() => new IdFileGenerator(''), TypeError);
  for (const m of ['ignore-valid-until', 'ignore-floor', 'ignore-version', 'ignore-missing', 'allow-backwards']) new IdFileGenerator(path, { _mutation: m });
});

test('the errors share the base class and have names', () => {
  for (const E of [NotHeldError, VersionChangedError, ClockBehindError]) {
    const e = new E('x');
    assert.ok(e instanceof NodeIdError && e instanceof Error);
    assert.equal(e.name, E.name);
  }
});

test('a clock outside the layout is a NodeIdError, not a wrong ID', () => {
  write(claim({ floorMs: 0, validUntilMs: T0 }));
  for (const t of [NaN, 1_700_000_000_000]) {
    assert.throws(() => gen({ clock: () => t }).nextId(), (e) => e.name === 'NodeIdError' && /outside the Snowflake layout/.test(e.message), String(t));
  }
});

test('a batch that spans a renewal reports the renewed claim (the driver\'s _nextIdsWithClaim)', () => {
  write(claim({ validUntilMs: T0 + 1 }));
  let calls = 0;
  const g = gen({
    clock: () => {
      if (++calls === 3) write(claim({ validUntilMs: T0 + 100 })); // the broker renews during the wait
      return calls < 3 ? T0 : T0 + 1;
    },
    maxClockWaitMs: 5000,
  });
  const { claim: c, ids } = g.nextBatch(5000);
  assert.equal(c.validUntilMs, T0 + 100);
  assert.equal(decode(ids[4999]).timeMs, T0 + 1);
  assert.ok(ids.every((id) => decode(id).timeMs < c.validUntilMs));
});
