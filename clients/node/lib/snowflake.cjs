'use strict';

// The project's Snowflake layout: 41 bits of ms since 2025-01-01T00:00:00Z,
// 10 bits of node ID, 12 bits of sequence.

/** Unix ms of the layout's epoch, 2025-01-01T00:00:00Z. */
const EPOCH_MS = 1735689600000;
/** Node IDs are 0 .. MAX_NODE_ID. */
const MAX_NODE_ID = 1023;
/** Sequence numbers within one millisecond are 0 .. MAX_SEQ. */
const MAX_SEQ = 4095;
/** The largest Unix ms the 41 timestamp bits hold. */
const MAX_TIME_MS = EPOCH_MS + 2 ** 41 - 1;

/**
 * The first ID of millisecond timeMs for nodeId (sequence 0).
 * @param {number} timeMs Unix ms, EPOCH_MS .. MAX_TIME_MS
 * @param {number} nodeId 0 .. MAX_NODE_ID
 * @returns {bigint}
 */
function idBase(timeMs, nodeId) {
  return (BigInt(timeMs - EPOCH_MS) << 22n) | (BigInt(nodeId) << 12n);
}

/**
 * Splits an ID into its parts.
 * @param {bigint | number | string} id an ID (a bigint, or its decimal string)
 * @returns {{timeMs: number, nodeId: number, seq: number}} timeMs in Unix ms
 */
function decode(id) {
  const v = BigInt(id);
  if (v < 0n || v >= 1n << 63n) throw new RangeError(`${id} is not a 63-bit Snowflake ID`);
  return {
    timeMs: Number(v >> 22n) + EPOCH_MS,
    nodeId: Number((v >> 12n) & 1023n),
    seq: Number(v & 4095n),
  };
}

module.exports = { EPOCH_MS, MAX_NODE_ID, MAX_SEQ, MAX_TIME_MS, idBase, decode };
