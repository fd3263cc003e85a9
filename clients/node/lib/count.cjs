'use strict';

// The bound on one batch, the broker's too (/ids?n= at most 10000).

/** The most IDs one nextIds call returns. */
const MAX_BATCH = 10000;

/**
 * Throws a RangeError unless n is an integer from 1 to MAX_BATCH.
 * @param {number} n
 */
function checkCount(n) {
  if (!Number.isInteger(n) || n < 1 || n > MAX_BATCH) {
    throw new RangeError(`n must be an integer from 1 to ${MAX_BATCH}, not ${n}`);
  }
}

module.exports = { MAX_BATCH, checkCount };
