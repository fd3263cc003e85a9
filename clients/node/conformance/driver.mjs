// The conformance driver (clients/CONFORMANCE.md): calls a generator in a
// loop and writes one line per call to standard output. Not part of the
// package's API.
//
//   node conformance/driver.mjs (--id-file PATH | --url URL | --url-env)
//     [--batch N] [--prefetch P] [--prefetch-max-age-ms A] [--duration-ms D] [--pause-ms P]
//     [--clock-steps AT:BY,...] [--reread-ms R] [--mutation NAME]
//
// Lines: "ok NODE VERSION VALIDUNTILMS ID ..." (VALIDUNTILMS "-" over HTTP),
// "err KIND MESSAGE", and at the end "done CALLS ERRORS". It stops after
// --duration-ms, on SIGTERM or SIGINT, or (without --duration-ms) when
// standard input ends; then exits 0. Bad arguments exit 2, --clock-steps
// and --reread-ms over HTTP among them.

import { writeSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { IdFileGenerator, HttpGenerator, NotHeldError, VersionChangedError, ClockBehindError, UnavailableError } from '../index.js';
import sleep_ from '../lib/sleep.cjs';

const { sleepSync } = sleep_;

const started = performance.now();

// write writes s and a newline to fd at once, whole, without Node's buffering.
function write(fd, s) {
  const buf = Buffer.from(s + '\n');
  for (let off = 0; off < buf.length; ) {
    try {
      off += writeSync(fd, buf, off);
    } catch (e) {
      if (e.code === 'EAGAIN') sleepSync(1); // a non-blocking pipe that is full
      else if (e.code === 'EPIPE') process.exit(0); // nobody reads any more
      else throw e;
    }
  }
}

function usage(msg) {
  write(2, `driver: ${msg}\nusage: node conformance/driver.mjs (--id-file PATH | --url URL | --url-env) [--batch N] [--prefetch P] [--prefetch-max-age-ms A] [--duration-ms D] [--pause-ms P] [--clock-steps AT:BY,...] [--reread-ms R] [--mutation NAME]`);
  process.exit(2);
}

// int parses a flag's value as an integer in [min, max].
function int(name, s, min, max) {
  if (!/^[+-]?\d+$/.test(s ?? '') || +s < min || +s > max) usage(`--${name} ${s}: want an integer from ${min} to ${max}`);
  return +s;
}

// clockSteps parses AT:BY,... into a clock: the host's wall clock plus the
// sum of the BYs whose AT (ms since the driver started) has passed.
function clockSteps(spec) {
  const steps = spec.split(',').map((part) => {
    const m = /^(\d+):([+-]?\d+)$/.exec(part.trim());
    if (!m) usage(`--clock-steps ${spec}: want AT:BY,... with AT and BY in ms, e.g. 0:-3000,2000:+1500`);
    return [+m[1], +m[2]];
  });
  steps.sort((a, b) => a[0] - b[0]);
  return () => {
    const at = performance.now() - started;
    let offset = 0;
    for (const [when, by] of steps) if (when <= at) offset += by;
    return Date.now() + offset;
  };
}

let args;
try {
  args = parseArgs({
    options: {
      ...Object.fromEntries(['id-file', 'url', 'batch', 'prefetch', 'prefetch-max-age-ms', 'duration-ms', 'pause-ms', 'clock-steps', 'reread-ms', 'mutation'].map((k) => [k, { type: 'string' }])),
      'url-env': { type: 'boolean' },
    },
    strict: true,
    allowPositionals: false,
  }).values;
} catch (e) {
  usage(e.message);
}
const overHTTP = args.url !== undefined || args['url-env'] === true;
if ([args['id-file'] !== undefined, args.url !== undefined, args['url-env'] === true].filter(Boolean).length !== 1) usage('give exactly one of --id-file, --url and --url-env');
const batch = args.batch === undefined ? 1 : int('batch', args.batch, 1, 10000);
const duration = args['duration-ms'] === undefined ? -1 : int('duration-ms', args['duration-ms'], 0, Number.MAX_SAFE_INTEGER);
const pause = args['pause-ms'] === undefined ? 0 : int('pause-ms', args['pause-ms'], 0, Number.MAX_SAFE_INTEGER);

let gen, call;
try {
  if (overHTTP) {
    if (['clock-steps', 'reread-ms'].some((k) => args[k] !== undefined)) {
      usage('--clock-steps and --reread-ms are for --id-file, not --url');
    }
    const prefetch = args.prefetch === undefined ? 0 : int('prefetch', args.prefetch, 0, 10000);
    const opts = { prefetch, _mutation: args.mutation };
    if (args['prefetch-max-age-ms'] !== undefined) { // 0: no limit
      opts.prefetchMaxAge = int('prefetch-max-age-ms', args['prefetch-max-age-ms'], 0, Number.MAX_SAFE_INTEGER) || null;
    }
    gen = new HttpGenerator(args.url, opts);
    call = async () => {
      const r = await gen.nextBatch(batch);
      return `ok ${r.nodeId} ${r.version} - ${r.ids.join(' ')}`;
    };
  } else {
    if (args.prefetch !== undefined || args['prefetch-max-age-ms'] !== undefined) usage('--prefetch and --prefetch-max-age-ms are for --url and --url-env, not --id-file');
    const opts = { _mutation: args.mutation };
    if (args['clock-steps'] !== undefined) opts.clock = clockSteps(args['clock-steps']);
    if (args['reread-ms'] !== undefined) opts.rereadMs = int('reread-ms', args['reread-ms'], 0, Number.MAX_SAFE_INTEGER);
    gen = new IdFileGenerator(args['id-file'], opts);
    call = () => {
      const { claim: c, ids } = gen.nextBatch(batch);
      return `ok ${c.nodeId} ${c.version} ${c.validUntilMs} ${ids.join(' ')}`;
    };
  }
} catch (e) {
  usage(e.message);
}

let stopped = false;
const stop = () => {
  stopped = true;
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
if (duration < 0) {
  // Without a duration, the end of standard input stops the driver.
  process.stdin.on('end', stop);
  process.stdin.on('close', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
}

const kind = (e) =>
  e instanceof NotHeldError ? 'NotHeld'
  : e instanceof VersionChangedError ? 'VersionChanged'
  : e instanceof ClockBehindError ? 'ClockBehind'
  : e instanceof UnavailableError ? 'Unavailable'
  : 'Other';
let firstCall = -1; // performance.now() of the first call: the duration counts from it
const left = () => (duration < 0 || firstCall < 0 ? Infinity : duration - (performance.now() - firstCall));
const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, Math.min(ms, left()))));
const yieldNow = () => new Promise((r) => setImmediate(r));

let calls = 0;
let errors = 0;
while (!stopped && left() > 0) {
  let failed = false;
  if (firstCall < 0) firstCall = performance.now();
  try {
    write(1, await call());
  } catch (e) {
    failed = true;
    errors++;
    write(1, `err ${kind(e)} ${String(e?.message ?? e).replace(/\s*\n\s*/g, '; ')}`);
  }
  calls++;
  if (pause > 0) await sleep(pause);
  else if (failed) await sleep(1);
  else await yieldNow(); // lets the SIGTERM and stdin handlers run
}
write(1, `done ${calls} ${errors}`);
if (gen instanceof HttpGenerator) gen.close();
process.exit(0);
