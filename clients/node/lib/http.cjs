'use strict';

// HttpGenerator: IDs from the broker's GET /ids?n=K over a keep-alive agent,
// optionally with a batch fetched ahead.

const http = require('node:http');
const { checkCount } = require('./count.cjs');
const { NodeIdError, UnavailableError } = require('./errors.cjs');

const DECIMAL = /^(0|[1-9][0-9]{0,18})$/;

/** The variable nodeid-broker run (for its child) and the deploy kit (for the application) set to the broker's base URL. */
const URL_VARIABLE = 'NODEID_URL';

/** Testing only: prefetched IDs reported with the node ID and version of the latest answer. */
const HTTP_MUTATIONS = Object.freeze(['prefetch-latest-version']);

/**
 * The URL of /ids from url, the broker's base URL or its /ids URL, or from
 * NODEID_URL when url is undefined or null.
 * @param {string | URL | undefined | null} url
 * @returns {string}
 * @throws {TypeError} for an unset NODEID_URL or a URL that is not http://
 */
function idsURL(url) {
  if (url === undefined || url === null) {
    url = process.env[URL_VARIABLE] ?? '';
    if (url === '') {
      throw new TypeError(`no URL given and ${URL_VARIABLE} is not set: pass the broker's base URL (e.g. http://127.0.0.1:8080) or set ${URL_VARIABLE} (nodeid-broker run sets it for its child, the deploy kit for the application)`);
    }
  }
  const u = new URL(url);
  if (u.protocol !== 'http:') throw new TypeError(`url must be http://, not ${u.protocol}`);
  u.pathname = u.pathname.replace(/\/*$/, '').replace(/\/ids$/, '') + '/ids';
  u.search = '';
  u.hash = '';
  return u.href;
}

/**
 * The IDs of one call and what they were issued under.
 * @typedef {{ids: bigint[], nodeId: number, version: number, claim: null}} Batch
 */

/**
 * Gets IDs from nodeid-broker's GET /ids (the safe default: the broker issues
 * every ID under its own fence). Calls return promises; several may run at
 * once, each on a socket of the keep-alive agent. Idle sockets do not keep
 * the process alive; close() frees them at once.
 *
 * With prefetch P (1 .. 10000) it keeps a batch of P IDs fetched ahead and
 * fetches the next once half of it is used, so that most calls need no round
 * trip. The broker issued every ID under its fence, so a prefetched ID stays
 * unique whenever it is used; it carries the time it was fetched. A batch is
 * never split across two answers: IDs left over when a call wants more are
 * skipped. prefetchMaxAge (ms, default 1000; null: no limit) bounds how old
 * a prefetched ID's time may be: a call skips a batch whose fetch was sent
 * longer ago than that (on the monotonic clock, before the call) and uses one
 * fetched anew, so that IDs stay roughly in time order after an idle spell.
 */
class HttpGenerator {
  #url;
  #timeoutMs;
  #agent;
  #prefetch;
  #maxAge; // ms, Infinity for no limit
  #now; // the monotonic clock, ms
  #mut;
  #closes = 0; // close() calls so far: a request sent before one is not sent again
  // Prefetching: the batch in use (its IDs from #pos on are unused), the
  // next one, and the one fetch at a time that fills it. A batch is usable
  // by a call that starts at or before the monotonic time its fetch was sent
  // plus #maxAge.
  #ids = [];
  #pos = 0;
  #nodeId = 0;
  #version = 0;
  #low = 0; // from this #pos on the next batch is fetched
  #until = -Infinity; // the batch in use is usable by calls up to here
  /** @type {Batch | null} */
  #ready = null;
  #readyUntil = -Infinity; // and the next one
  /** @type {Promise<Error | null> | null} the fetch under way: its error, or null */
  #fetching = null;
  #fetchingUntil = -Infinity; // its batch's

  /**
   * @param {string | URL} [url] the broker's base URL (e.g. http://127.0.0.1:8080) or its /ids URL; default: NODEID_URL
   * @param {object} [options]
   * @param {number} [options.timeoutMs] bound on each request, in ms (default 2000)
   * @param {number} [options.prefetch] IDs fetched ahead, 1 .. 10000 (default 0: off)
   * @param {number | null} [options.prefetchMaxAge] a prefetched batch is skipped once its fetch was sent this long ago, in ms (default 1000; null: no limit)
   * @param {() => number} [options._now] TESTING ONLY: the monotonic clock in ms (default performance.now)
   * @param {string} [options._mutation] TESTING ONLY: break one rule on purpose (one of HTTP_MUTATIONS)
   */
  constructor(url, { timeoutMs = 2000, prefetch = 0, prefetchMaxAge = 1000, _now = () => performance.now(), _mutation } = {}) {
    this.#url = idsURL(url);
    if (!(timeoutMs > 0) || !Number.isFinite(timeoutMs)) throw new RangeError(`timeoutMs must be a finite number > 0, not ${timeoutMs}`);
    if (!Number.isInteger(prefetch) || prefetch < 0 || prefetch > 10000) throw new RangeError(`prefetch must be an integer from 0 (off) to 10000, not ${prefetch}`);
    if (prefetchMaxAge !== null && (typeof prefetchMaxAge !== 'number' || !(prefetchMaxAge > 0) || !Number.isFinite(prefetchMaxAge))) {
      throw new RangeError(`prefetchMaxAge must be a finite number of ms > 0, or null (no limit), not ${prefetchMaxAge}`);
    }
    if (typeof _now !== 'function') throw new TypeError('_now must be a function');
    if (_mutation !== undefined && !HTTP_MUTATIONS.includes(_mutation)) {
      throw new RangeError(`unknown mutation ${JSON.stringify(_mutation)}: want one of ${HTTP_MUTATIONS.join(', ')}`);
    }
    this.#timeoutMs = timeoutMs;
    this.#prefetch = prefetch;
    this.#maxAge = prefetchMaxAge ?? Infinity;
    this.#now = _now;
    this.#mut = _mutation ?? '';
    this.#agent = new http.Agent({ keepAlive: true });
  }

  /**
   * One ID.
   * @returns {Promise<bigint>}
   * @throws {UnavailableError | NodeIdError}
   */
  async nextId() {
    if (this.#prefetch) {
      const now = this.#now();
      const i = this.#pos;
      if (i < this.#ids.length && now <= this.#until) {
        this.#pos = i + 1;
        if (i + 1 >= this.#low) this.#fetchAhead();
        return this.#ids[i];
      }
      return (await this.#take(1, now)).ids[0];
    }
    return (await this.#fetch(1)).ids[0];
  }

  /**
   * n IDs, strictly increasing, from one answer.
   * @param {number} n 1 .. 10000
   * @returns {Promise<bigint[]>}
   * @throws {UnavailableError | NodeIdError}
   */
  async nextIds(n) {
    return (await this.nextBatch(n)).ids;
  }

  /**
   * n IDs, strictly increasing, from one answer, with the node ID and
   * version they were issued under (claim null: the broker fences its IDs).
   * @param {number} n 1 .. 10000
   * @returns {Promise<Batch>}
   * @throws {UnavailableError | NodeIdError}
   */
  async nextBatch(n) {
    checkCount(n);
    return this.#prefetch ? this.#take(n, this.#now()) : this.#fetch(n);
  }

  /**
   * Closes the keep-alive sockets and drops the prefetched IDs; a request in
   * flight rejects with a NodeIdError and is not sent again. Later calls open
   * new sockets.
   */
  close() {
    this.#closes++;
    this.#ids = [];
    this.#pos = 0;
    this.#ready = null;
    this.#agent.destroy();
  }

  // #take takes n IDs from the prefetched batch, moving to the next one (or
  // waiting for it, or fetching it) when this one has fewer left or is too
  // old for a call started at monotonic time now.
  async #take(n, now) {
    for (;;) {
      const i = this.#pos;
      if (this.#ids.length - i >= n && now <= this.#until) {
        this.#pos = i + n;
        if (this.#pos >= this.#low) this.#fetchAhead();
        return { ids: this.#ids.slice(i, i + n), nodeId: this.#nodeId, version: this.#version, claim: null };
      }
      if (this.#ready !== null) {
        this.#use(this.#ready, this.#readyUntil); // if too old, skipped above
        continue;
      }
      // The fetch under way, unless none is or it was sent too long ago.
      const f = this.#fetching !== null && now <= this.#fetchingUntil ? this.#fetching : this.#start(Math.max(n, this.#prefetch));
      const err = await f;
      if (err !== null && this.#ready === null) throw err;
    }
  }

  // #use makes b the batch in use (the rest of the one before is skipped).
  #use(b, until) {
    this.#ids = b.ids;
    this.#until = until;
    this.#pos = 0;
    this.#nodeId = b.nodeId;
    this.#version = b.version;
    this.#low = b.ids.length - Math.floor(this.#prefetch / 2);
    this.#ready = null;
  }

  // #fetchAhead starts fetching the next batch unless it is there or under way.
  #fetchAhead() {
    if (this.#ready === null && this.#fetching === null) this.#start(this.#prefetch);
  }

  // #start starts fetching n IDs into #ready; the promise it returns (and
  // leaves in #fetching) resolves with the fetch's error, or null. A fetch
  // under way that was sent too long ago is left to end alone.
  #start(n) {
    const until = this.#now() + this.#maxAge; // before the request is sent
    const f = this.#fetch(n).then(
      (b) => {
        if (this.#fetching === f) this.#fetching = null;
        if (until >= this.#readyUntil) { // not over a fresher one
          this.#ready = b;
          this.#readyUntil = until;
        }
        if (this.#mut === 'prefetch-latest-version') {
          this.#nodeId = b.nodeId;
          this.#version = b.version;
        }
        return null;
      },
      (e) => {
        if (this.#fetching === f) this.#fetching = null;
        return e;
      },
    );
    this.#fetching = f;
    this.#fetchingUntil = until;
    return f;
  }

  // #fetch GETs n IDs: the answer's batch, or its error.
  async #fetch(n) {
    const url = `${this.#url}?n=${n}`;
    const closes = this.#closes;
    let res;
    try {
      res = await this.#get(url);
    } catch (e) {
      if (this.#closes !== closes) throw new NodeIdError(`GET ${url}: the generator was closed while the request was in flight`, { cause: e });
      // A kept-alive socket the broker closed meanwhile: once more on a new one.
      if (!e.reusedSocket || (e.code !== 'ECONNRESET' && e.code !== 'EPIPE')) throw e;
      res = await this.#get(url);
    }
    const { status, headers, body } = res;
    let doc;
    try {
      doc = JSON.parse(body);
    } catch {
      doc = null;
    }
    if (status === 503) {
      const reason = typeof doc?.reason === 'string' ? doc.reason : body.trim();
      const after = Number(headers['retry-after']);
      throw new UnavailableError(`GET ${url}: 503: ${reason}`, Number.isFinite(after) && after >= 0 ? after * 1000 : 1000);
    }
    if (status !== 200) {
      const reason = typeof doc?.reason === 'string' ? doc.reason : body.trim().slice(0, 200);
      throw new NodeIdError(`GET ${url}: HTTP ${status}: ${reason}`);
    }
    const ids = doc?.ids;
    if (!Array.isArray(ids) || ids.length !== n || !Number.isSafeInteger(doc.nodeId) || !Number.isSafeInteger(doc.version)) {
      throw new NodeIdError(`GET ${url}: not an answer with ${n} IDs: ${body.slice(0, 200)}`);
    }
    const out = new Array(n);
    for (let i = 0; i < n; i++) {
      const s = ids[i];
      if (typeof s !== 'string' || !DECIMAL.test(s)) throw new NodeIdError(`GET ${url}: ID ${JSON.stringify(s)} is not a decimal string`);
      out[i] = BigInt(s);
      if (i > 0 && out[i] <= out[i - 1]) throw new NodeIdError(`GET ${url}: IDs not increasing at ${s}`);
    }
    return { ids: out, nodeId: doc.nodeId, version: doc.version, claim: null };
  }

  // #get GETs url and resolves with its status, headers and body, within
  // the timeout; network errors reject with a NodeIdError (its reusedSocket
  // and code those of the failure).
  #get(url) {
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (err, reusedSocket) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const e = err instanceof NodeIdError ? err : new NodeIdError(`GET ${url}: ${err.message}`, { cause: err });
        Object.assign(e, { code: err.code, reusedSocket });
        reject(e);
      };
      const req = http.get(url, { agent: this.#agent }, (res) => {
        const chunks = [];
        res.on('data', (b) => chunks.push(b));
        res.on('error', (err) => fail(err, false));
        res.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
        });
      });
      req.on('error', (err) => fail(err, req.reusedSocket));
      const timer = setTimeout(() => {
        const err = new NodeIdError(`GET ${url}: timed out after ${this.#timeoutMs} ms`);
        fail(err, false);
        req.destroy(err);
      }, this.#timeoutMs);
    });
  }
}

module.exports = { HttpGenerator, HTTP_MUTATIONS, URL_VARIABLE };
