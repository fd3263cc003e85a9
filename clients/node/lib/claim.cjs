'use strict';

// The id file nodeid-broker writes (--id-file):
// {"nodeId":7,"version":3,"floorMs":1763712330000,"validUntilMs":1763712345678}

const { readFileSync } = require('node:fs');
const { NotHeldError } = require('./errors.cjs');
const { MAX_NODE_ID } = require('./snowflake.cjs');

/**
 * A claim on a node ID, as the id file names it.
 * @typedef {Readonly<{nodeId: number, version: number, floorMs: number, validUntilMs: number}>} Claim
 */

const FIELDS = ['nodeId', 'version', 'floorMs', 'validUntilMs'];

/**
 * Parses an id file's text strictly: a JSON object whose four fields are
 * safe, non-negative integers, nodeId at most 1023 (other fields ignored).
 * @param {string} text
 * @returns {Claim} frozen
 * @throws {Error} with the reason when the text is not such a claim
 */
function parseClaim(text) {
  if (text.trim() === '') throw new Error('empty (truncated?)');
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new Error(`not JSON (truncated?): ${e.message}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new Error('not a JSON object');
  for (const f of FIELDS) {
    const v = doc[f];
    if (v === undefined) throw new Error(`field ${f} is missing`);
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new Error(`field ${f} is not a safe integer: ${JSON.stringify(v)}`);
    if (v < 0) throw new Error(`field ${f} is negative: ${v}`);
  }
  if (doc.nodeId > MAX_NODE_ID) throw new Error(`field nodeId is above ${MAX_NODE_ID}: ${doc.nodeId}`);
  const { nodeId, version, floorMs, validUntilMs } = doc;
  return Object.freeze({ nodeId, version, floorMs, validUntilMs });
}

/**
 * Reads and parses the id file at path.
 * @param {string} path
 * @returns {Claim}
 * @throws {NotHeldError} naming the path and the reason (missing, unreadable, garbage)
 */
function readClaim(path) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const why = e.code === 'ENOENT' ? 'missing (the broker holds no node ID, or fenced)' : `unreadable: ${e.message}`;
    throw new NotHeldError(`id file ${path}: ${why}`, { cause: e });
  }
  try {
    return parseClaim(text);
  } catch (e) {
    throw new NotHeldError(`id file ${path}: ${e.message}`);
  }
}

module.exports = { parseClaim, readClaim };
