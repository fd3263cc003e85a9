'use strict';

// A synchronous sleep that blocks the thread without burning a core.

const cell = new Int32Array(new SharedArrayBuffer(4));

/**
 * Blocks the calling thread for about ms milliseconds (fractions allowed)
 * with Atomics.wait: the event loop stops too.
 * @param {number} ms
 */
function sleepSync(ms) {
  if (ms > 0) Atomics.wait(cell, 0, 0, ms);
}

module.exports = { sleepSync };
