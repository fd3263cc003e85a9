// Read the node ID that nodeid-broker writes to its id file (--id-file).
//
// The broker writes
// {"nodeId":7,"version":3,"floorMs":1763712330000,"validUntilMs":1763712345678}
// atomically once it holds the lease, rewrites it after every renewal with a
// later validUntilMs, and removes it the moment it fences itself. An
// application that issues IDs itself with the node ID (docs/nodeid-broker.md,
// "Sidecar use") must:
//
// - use the node ID only while the file exists with that nodeId and version
//   and this host's clock is before validUntilMs: check with every ID or
//   batch (IDFile.claim does, and returns null otherwise);
// - re-read the file at least every second (claim re-reads it when its last
//   reading is a second old, or the clock went back);
// - stop for good when the version changes: a new version is a new claim,
//   whose IDs must not follow on from the old one's;
// - issue only timestamps above floorMs (the predecessor's last), and never
//   one below its own last: the host's clock may step back after the file
//   was written.
//
// validUntilMs is what covers a broker that crashed or froze and so could
// not remove the file: the application stops by itself, before another task
// may take the node ID.
//
//   const ids = new IDFile('/nodeid/id.json');
//   const claim = ids.claim(); // null: no usable node ID now
//   ...
//   const c = ids.claim();
//   if (c === null || c.version !== claim.version) stopIssuing();
//
// The file is read synchronously: a few dozen bytes, at most once a second.

import { readFileSync } from 'node:fs';

// How old a reading may be before claim() reads the file again, in ms: the
// broker's --id-file-grace (3 s) exceeds it with slack.
export const REREAD_MS = 1000;

// parse returns the claim in an id file's text, null when it is not one.
export function parse(text) {
  let doc;
  try {
    doc = JSON.parse(text);
  } catch {
    return null;
  }
  if (doc === null || typeof doc !== 'object') return null;
  const { nodeId, version, validUntilMs, floorMs = 0 } = doc; // floorMs: 0 from a broker that writes none
  for (const v of [nodeId, version, validUntilMs, floorMs]) {
    if (!Number.isSafeInteger(v) || v < 0) return null;
  }
  return Object.freeze({ nodeId, version, floorMs, validUntilMs });
}

// IDFile reads the id file at path. now returns this host's wall clock in
// Unix ms (Date.now), the clock validUntilMs is stamped with.
export class IDFile {
  #claim = null;
  #readAt = null;

  constructor(path, { rereadMs = REREAD_MS, now = Date.now } = {}) {
    this.path = path;
    this.rereadMs = rereadMs;
    this.now = now;
  }

  // claim returns {nodeId, version, floorMs, validUntilMs} while it may be used: the
  // file (read at most rereadMs ago) names it and the clock is before its
  // validUntilMs. null otherwise: stop issuing IDs.
  claim() {
    const now = this.now();
    if (this.#readAt === null || !(now - this.#readAt >= 0 && now - this.#readAt < this.rereadMs)) {
      this.#claim = this.#read();
      this.#readAt = now;
    }
    const c = this.#claim;
    return c === null || now >= c.validUntilMs ? null : c;
  }

  // nodeId returns the node ID while it may be used, else null.
  nodeId() {
    const c = this.claim();
    return c === null ? null : c.nodeId;
  }

  #read() {
    try {
      return parse(readFileSync(this.path, 'utf8'));
    } catch {
      return null; // gone: the broker fenced, or has not written it yet
    }
  }
}
