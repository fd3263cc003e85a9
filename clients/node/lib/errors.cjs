'use strict';

// The package's errors: one base class, one subclass per way a call fails.

/** Every error this package raises on purpose. */
class NodeIdError extends Error {
  /**
   * @param {string} message
   * @param {{cause?: unknown}} [options]
   */
  constructor(message, options) {
    super(message, options);
    this.name = 'NodeIdError';
  }
}

/**
 * No usable node ID now: the id file is missing, truncated or garbage, or its
 * claim expired (validUntilMs passed). Transient: retry later; the generator
 * issues again once a valid file for the same claim is back.
 */
class NotHeldError extends NodeIdError {
  /** @param {string} message @param {{cause?: unknown}} [options] */
  constructor(message, options) {
    super(message, options);
    this.name = 'NotHeldError';
  }
}

/**
 * The id file names another nodeId or version than the claim the generator
 * first used. Permanent: every later call of this generator throws it; a new
 * generator (a new process) starts from the new claim's floor.
 */
class VersionChangedError extends NodeIdError {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'VersionChangedError';
  }
}

/**
 * The clock stayed behind the claim's floorMs or the generator's last
 * timestamp for longer than maxClockWaitMs.
 */
class ClockBehindError extends NodeIdError {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'ClockBehindError';
  }
}

/**
 * The broker answered 503: it holds no valid lease now. Retry after
 * retryAfterMs (the broker's Retry-After, 1 s).
 */
class UnavailableError extends NodeIdError {
  /** @param {string} message @param {number} retryAfterMs */
  constructor(message, retryAfterMs) {
    super(message);
    this.name = 'UnavailableError';
    /** How long the broker asked to wait before retrying, in ms. */
    this.retryAfterMs = retryAfterMs;
  }
}

module.exports = { NodeIdError, NotHeldError, VersionChangedError, ClockBehindError, UnavailableError };
