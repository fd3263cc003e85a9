// Tests of nodeid_idfile.mjs (node --test, from test/all.sh).

import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { IDFile, parse } from './nodeid_idfile.mjs';

let dir, path, clock, ids;

function write(nodeId, version, validUntilMs) {
  writeFileSync(path + '.tmp', JSON.stringify({ nodeId, version, validUntilMs }));
  renameSync(path + '.tmp', path);
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'nodeid-idfile-'));
  path = join(dir, 'id.json');
  clock = { t: 1_800_000_000_000 };
  ids = new IDFile(path, { now: () => clock.t });
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('usable until validUntilMs', () => {
  write(7, 3, 1_800_000_002_000);
  assert.deepEqual(ids.claim(), { nodeId: 7, version: 3, floorMs: 0, validUntilMs: 1_800_000_002_000 });
  clock.t += 1999;
  assert.equal(ids.nodeId(), 7);
  clock.t += 1; // at validUntilMs: no longer
  assert.equal(ids.nodeId(), null);
});

test('a renewal extends it', () => {
  write(7, 3, 1_800_000_002_000);
  assert.equal(ids.nodeId(), 7);
  write(7, 3, 1_800_000_005_000);
  clock.t += 2500; // past the first validUntilMs: the re-read has the later one
  assert.equal(ids.claim().validUntilMs, 1_800_000_005_000);
});

test('re-read at least every second', () => {
  write(7, 3, 1_800_000_010_000);
  assert.equal(ids.nodeId(), 7);
  rmSync(path); // the broker fenced
  clock.t += 999;
  assert.equal(ids.nodeId(), 7); // read less than a second ago
  clock.t += 1;
  assert.equal(ids.nodeId(), null);
});

test('a clock gone back re-reads', () => {
  write(7, 3, 1_800_000_010_000);
  assert.equal(ids.nodeId(), 7);
  rmSync(path);
  clock.t -= 5000;
  assert.equal(ids.nodeId(), null);
});

test('a version change is a new claim', () => {
  write(7, 3, 1_800_000_010_000);
  const first = ids.claim();
  write(7, 4, 1_800_000_020_000);
  clock.t += 1000;
  assert.equal(ids.claim().version, 4);
  assert.notEqual(ids.claim().version, first.version);
});

test('missing or garbage', () => {
  assert.equal(ids.claim(), null);
  for (const text of ['', '{', '[]', 'null', '{"nodeId":7,"version":3}', '{"nodeId":"7","version":3,"validUntilMs":1}',
    '{"nodeId":true,"version":3,"validUntilMs":1900000000000}', '{"nodeId":-1,"version":3,"validUntilMs":1900000000000}',
    '{"nodeId":1.5,"version":3,"validUntilMs":1900000000000}']) {
    assert.equal(parse(text), null, text);
  }
});

test("parses the broker's file", () => {
  assert.deepEqual(parse('{"nodeId":0,"version":1,"floorMs":1795612880000,"validUntilMs":1795612882433}\n'),
    { nodeId: 0, version: 1, floorMs: 1795612880000, validUntilMs: 1795612882433 });
});

test('floorMs: the floor to issue above, 0 when the broker writes none', () => {
  assert.equal(parse(JSON.stringify({ nodeId: 7, version: 3, floorMs: 1_800_000_000_500, validUntilMs: 1_800_000_002_000 })).floorMs, 1_800_000_000_500);
  assert.equal(parse('{"nodeId":7,"version":3,"validUntilMs":1}').floorMs, 0);
  assert.equal(parse('{"nodeId":7,"version":3,"validUntilMs":1,"floorMs":-1}'), null);
});
