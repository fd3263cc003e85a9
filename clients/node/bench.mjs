// Measures IDs per second in one process.
//
//   node bench.mjs [URL] [--id-file PATH] [--seconds S]
//
// Id-file mode always: on PATH (a broker's --id-file), or else on a temporary
// id file with a claim valid for an hour. HTTP mode too when a broker's base
// URL is given (e.g. http://127.0.0.1:18080), without and with a prefetch.
// One millisecond holds 4,096 IDs: 4.096 million IDs/s is the layout's limit
// for one node ID.

import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { IdFileGenerator, HttpGenerator } from './index.js';

const { values, positionals } = parseArgs({ options: { seconds: { type: 'string', default: '2' }, 'id-file': { type: 'string' } }, allowPositionals: true });
const ms = Number(values.seconds) * 1000;

// rate calls fn (which returns how many IDs it got, or a promise of it) for ms
// and returns IDs/s.
async function rate(fn) {
  const start = performance.now();
  let ids = 0;
  while (performance.now() - start < ms) ids += await fn();
  return ids / ((performance.now() - start) / 1000);
}

const line = (what, r) => console.log(`${what.padEnd(40)} ${Math.round(r).toLocaleString('en-US').padStart(12)} IDs/s`);

const dir = mkdtempSync(join(tmpdir(), 'nodeid-bench-'));
try {
  let path = values['id-file'];
  if (path === undefined) {
    path = join(dir, 'id.json');
    writeFileSync(path, JSON.stringify({ nodeId: 7, version: 1, floorMs: Date.now() - 1000, validUntilMs: Date.now() + 3_600_000 }));
  }
  const g = new IdFileGenerator(path);
  // synchronous loops in chunks, so that rate's await costs nothing per ID
  line('id file: nextId()', await rate(() => {
    for (let i = 0; i < 1000; i++) g.nextId();
    return 1000;
  }));
  line('id file: nextIds(1000)', await rate(() => g.nextIds(1000).length));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

if (positionals[0]) {
  const h = new HttpGenerator(positionals[0]);
  line('http: await nextId()', await rate(async () => (await h.nextId(), 1)));
  line('http: await nextIds(1000)', await rate(async () => (await h.nextIds(1000)).length));
  line('http: 8 concurrent nextIds(1000)', await rate(async () => (await Promise.all(Array.from({ length: 8 }, () => h.nextIds(1000)))).length * 1000));
  h.close();
  const p = new HttpGenerator(positionals[0], { prefetch: 10000 });
  await p.nextId(); // the first batch
  line('http prefetch 10000: await nextId()', await rate(async () => {
    for (let i = 0; i < 1000; i++) await p.nextId();
    return 1000;
  }));
  p.close();
}
