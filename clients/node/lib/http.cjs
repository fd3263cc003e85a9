// HttpGenerator: IDs from the broker's GET /ids?n=K over a keep-alive agent.

import http from 'node:http';
import { checkCount } from './count.js';
import { NodeIdError, UnavailableError } from './errors.js';

const DECIMAL = /^(0|[1-9][0-9]{0,18})$/;

/**
 * Gets IDs from nodeid-broker's GET /ids (the safe default: the broker issues
 * every ID under its own fence). Calls return promises; several may run at
 * once, each on a socket of the keep-alive agent. Idle sockets do not keep
 * the process alive; close() frees them at once.
 */
export class HttpGenerator {
  #url;
  #timeoutMs;
  #agent;

  /**
   * @param {string | URL} url the broker's base URL, e.g. http://127.0.0.1:8080
   * @param {object} [options]
   * @param {number} [options.timeoutMs] bound on each request, in ms (default 2000)
   */
  constructor(url, { timeoutMs = 2000 } = {}) {
    const u = new URL(url);
    if (u.protocol !== 'http:') throw new TypeError(`url must be http://, not ${u.protocol}`);
    if (!(timeoutMs > 0) || !Number.isFinite(timeoutMs)) throw new RangeError(`timeoutMs must be a finite number > 0, not ${timeoutMs}`);
    u.pathname = u.pathname.replace(/\/*$/, '/ids');
    u.search = '';
    u.hash = '';
    this.#url = u.href;
    this.#timeoutMs = timeoutMs;
    this.#agent = new http.Agent({ keepAlive: true });
  }

  /**
   * One ID.
   * @returns {Promise<bigint>}
   * @throws {UnavailableError | NodeIdError}
   */
  async nextId() {
    return (await this._nextIdsWithClaim(1)).ids[0];
  }

  /**
   * n IDs, strictly increasing, in one request.
   * @param {number} n 1 .. 10000
   * @returns {Promise<bigint[]>}
   * @throws {UnavailableError | NodeIdError}
   */
  async nextIds(n) {
    checkCount(n);
    return (await this._nextIdsWithClaim(n)).ids;
  }

  /** Closes the keep-alive sockets; later calls open new ones. */
  close() {
    this.#agent.destroy();
  }

  /**
   * Internal (the conformance driver's): nextIds(n) with the nodeId and
   * version of the response.
   * @param {number} n
   * @returns {Promise<{nodeId: number, version: number, ids: bigint[]}>}
   */
  async _nextIdsWithClaim(n) {
    checkCount(n);
    const url = `${this.#url}?n=${n}`;
    let res;
    try {
      res = await this.#get(url);
    } catch (e) {
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
    return { nodeId: doc.nodeId, version: doc.version, ids: out };
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
