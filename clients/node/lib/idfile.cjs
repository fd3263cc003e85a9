'use strict';

// IdFileGenerator: Snowflake IDs issued in this process under the claim
// nodeid-broker writes to its id file (clients/README.md, rules 1-7).

const { readClaim } = require('./claim.cjs');
const { checkCount } = require('./count.cjs');
const { ClockBehindError, NodeIdError, NotHeldError, VersionChangedError } = require('./errors.cjs');
const { sleepSync } = require('./sleep.cjs');
const { EPOCH_MS, MAX_SEQ, MAX_TIME_MS, idBase } = require('./snowflake.cjs');

/** Testing only: the names of the rules a generator can be told to break. */
const MUTATIONS = Object.freeze([
  'ignore-valid-until', // issue past validUntilMs
  'ignore-floor', // issue at or below floorMs
  'ignore-version', // go on after the nodeId or version changes
  'ignore-missing', // go on with the last claim while the file is missing or garbage
  'allow-backwards', // issue below its own last timestamp
]);

/** The longest single sleep while waiting for the clock, in ms: the file is re-checked in between. */
const MAX_SLEEP_MS = 50;

/**
 * Issues Snowflake IDs in this process with the node ID named by the broker's
 * id file, keeping the rules of clients/README.md. Its methods are
 * synchronous: a wait for the clock (at most maxClockWaitMs) blocks the
 * thread, event loop included.
 */
class IdFileGenerator {
  #path;
  #clock;
  #rereadMs;
  #maxClockWaitMs;
  #mut;
  /** @type {import('./claim.cjs').Claim | null} the last valid claim read */
  #claim = null;
  /** @type {NotHeldError | null} why the last read gave no claim */
  #error = null;
  #readAt = -Infinity; // performance.now() of the last read
  /** @type {import('./claim.cjs').Claim | null} the first claim used */
  #pinned = null;
  #dead = ''; // the VersionChangedError's message once the claim changed
  #lastTs = -1; // the last timestamp issued
  #lastSeq = MAX_SEQ; // the last sequence number issued at #lastTs
  /** @type {import('./claim.cjs').Claim | null} the claim of the last batch issued */
  #issuedUnder = null;
  #baseTs = -1; // the ms and node idBase was computed for, and its value
  #baseNode = -1;
  #base = 0n;

  /**
   * @param {string} path the broker's id file (--id-file)
   * @param {object} [options]
   * @param {() => number} [options.clock] the host's wall clock in Unix ms (default Date.now)
   * @param {number} [options.rereadMs] re-read the file when the last reading is this old on the monotonic clock (default 1000)
   * @param {number} [options.maxClockWaitMs] how long to wait for a clock behind the floor or the last timestamp before ClockBehindError (default 5000)
   * @param {string} [options._mutation] TESTING ONLY: break one rule on purpose (one of MUTATIONS)
   */
  constructor(path, { clock = Date.now, rereadMs = 1000, maxClockWaitMs = 5000, _mutation } = {}) {
    if (typeof path !== 'string' || path === '') throw new TypeError('path must be a non-empty string');
    if (typeof clock !== 'function') throw new TypeError('clock must be a function');
    for (const [k, v] of [['rereadMs', rereadMs], ['maxClockWaitMs', maxClockWaitMs]]) {
      if (typeof v !== 'number' || !(v >= 0) || !Number.isFinite(v)) throw new RangeError(`${k} must be a finite number >= 0, not ${v}`);
    }
    if (_mutation !== undefined && !MUTATIONS.includes(_mutation)) {
      throw new RangeError(`unknown mutation ${JSON.stringify(_mutation)}: want one of ${MUTATIONS.join(', ')}`);
    }
    this.#path = path;
    this.#clock = clock;
    this.#rereadMs = rereadMs;
    this.#maxClockWaitMs = maxClockWaitMs;
    this.#mut = _mutation ?? '';
  }

  /** The id file's path. */
  get path() {
    return this.#path;
  }

  /**
   * One ID.
   * @returns {bigint}
   * @throws {NotHeldError | VersionChangedError | ClockBehindError}
   */
  nextId() {
    return this.#issue(1)[0];
  }

  /**
   * n IDs, strictly increasing, all issued under the rules, or none.
   * @param {number} n 1 .. 10000
   * @returns {bigint[]}
   * @throws {NotHeldError | VersionChangedError | ClockBehindError}
   */
  nextIds(n) {
    checkCount(n);
    return this.#issue(n);
  }

  /**
   * The claim IDs are issued under now (re-reading the file if due), frozen.
   * Throws as nextId would, but never waits for the clock.
   * @returns {import('./claim.cjs').Claim}
   * @throws {NotHeldError | VersionChangedError}
   */
  claim() {
    const now = Math.floor(this.#clock());
    return this.#current(this.#mut === 'allow-backwards' ? now : Math.max(now, this.#lastTs));
  }

  /**
   * nextIds(n) with the claim the batch was issued under, taken in the same
   * step, and its node ID and version.
   * @param {number} n 1 .. 10000
   * @returns {{ids: bigint[], nodeId: number, version: number, claim: import('./claim.cjs').Claim}}
   * @throws {NotHeldError | VersionChangedError | ClockBehindError}
   */
  nextBatch(n) {
    checkCount(n);
    const ids = this.#issue(n);
    const claim = /** @type {import('./claim.cjs').Claim} */ (this.#issuedUnder);
    return { ids, nodeId: claim.nodeId, version: claim.version, claim };
  }

  // #issue issues n IDs, committing the new last timestamp only when all
  // are, and leaves the claim they were issued under in #issuedUnder.
  #issue(n) {
    const ids = new Array(n);
    let k = 0;
    let ts = this.#lastTs;
    let seq = this.#lastSeq;
    let deadline = -1; // performance.now() when a wait for the clock gives up
    let c;
    while (k < n) {
      const now = Math.floor(this.#clock());
      const t = this.#mut === 'allow-backwards' ? now : Math.max(now, ts);
      c = this.#current(t);
      if (t <= c.floorMs && this.#mut !== 'ignore-floor') {
        if (c.floorMs + 1 >= c.validUntilMs) throw new NotHeldError(`id file ${this.#path}: claim has no time left: floorMs ${c.floorMs}, validUntilMs ${c.validUntilMs}`);
        deadline = this.#wait(deadline, c.floorMs + 1 - t, `the clock (${now}) is at or behind the claim's floorMs (${c.floorMs})`);
        continue;
      }
      if (t === ts && seq >= MAX_SEQ) {
        // the millisecond's sequence is used up: wait for the next one
        deadline = now < ts
          ? this.#wait(deadline, ts - now, `the clock (${now}) is behind the last ID's timestamp (${ts})`)
          : this.#wait(deadline, 0.1, `the clock did not pass ${ts} after its sequence ran out`);
        continue;
      }
      if (!(t >= EPOCH_MS && t <= MAX_TIME_MS)) throw new NodeIdError(`timestamp ${t} is outside the Snowflake layout (epoch ${EPOCH_MS}, 41 bits)`);
      if (t !== ts) {
        ts = t;
        seq = -1;
      }
      if (t !== this.#baseTs || c.nodeId !== this.#baseNode) {
        this.#base = idBase(t, c.nodeId);
        this.#baseTs = t;
        this.#baseNode = c.nodeId;
      }
      const take = Math.min(n - k, MAX_SEQ - seq);
      let id = this.#base + BigInt(seq + 1);
      for (const end = k + take; k < end; k++) ids[k] = id++;
      seq += take;
    }
    this.#lastTs = ts;
    this.#lastSeq = seq;
    this.#issuedUnder = c;
    return ids;
  }

  // #wait sleeps up to ms for the clock (at most MAX_SLEEP_MS, so that the
  // file is checked in between) and returns the deadline of this call's
  // waits (set by the first, -1 before); past it, it throws ClockBehindError.
  #wait(deadline, ms, why) {
    const now = performance.now();
    if (deadline < 0) deadline = now + this.#maxClockWaitMs;
    if (now >= deadline) throw new ClockBehindError(`${why} for ${this.#maxClockWaitMs} ms (id file ${this.#path})`);
    sleepSync(Math.min(ms, deadline - now, MAX_SLEEP_MS));
    return deadline;
  }

  // #current returns the claim under which timestamp t may be issued,
  // re-reading the file when its reading is stale or gives no claim for t.
  #current(t) {
    if (this.#dead) throw new VersionChangedError(this.#dead);
    const keepVU = this.#mut !== 'ignore-valid-until';
    const usable = this.#error === null && this.#claim !== null && (!keepVU || t < this.#claim.validUntilMs);
    if (!usable || performance.now() - this.#readAt >= this.#rereadMs) this.#read();
    if (this.#error !== null) throw this.#error;
    const c = /** @type {import('./claim.cjs').Claim} */ (this.#claim);
    if (keepVU && t >= c.validUntilMs) {
      throw new NotHeldError(`id file ${this.#path}: claim expired: timestamp ${t} is at or past validUntilMs ${c.validUntilMs} (nodeId ${c.nodeId}, version ${c.version})`);
    }
    this.#pinned ??= c;
    return c;
  }

  // #read reads the file into #claim or #error; a claim other than the
  // pinned one ends the generator.
  #read() {
    this.#readAt = performance.now();
    let c;
    try {
      c = readClaim(this.#path);
    } catch (e) {
      if (this.#mut === 'ignore-missing' && this.#claim !== null) return;
      this.#claim = null;
      this.#error = /** @type {NotHeldError} */ (e);
      return;
    }
    const p = this.#pinned;
    if (p !== null && (c.nodeId !== p.nodeId || c.version !== p.version)) {
      if (this.#mut !== 'ignore-version') {
        this.#dead = `id file ${this.#path} names nodeId ${c.nodeId} version ${c.version}, not the claim this generator used (nodeId ${p.nodeId} version ${p.version}): it stops for good; start a new one (a new process)`;
        throw new VersionChangedError(this.#dead);
      }
      this.#pinned = c;
    }
    this.#claim = c;
    this.#error = null;
  }
}

module.exports = { MUTATIONS, IdFileGenerator };
