// Types of nodeid-client (index.cjs; index.d.ts re-exports them for import).

/** A claim on a node ID, as the broker's id file names it (frozen). */
export interface Claim {
  readonly nodeId: number;
  readonly version: number;
  /** Unix ms: IDs are stamped above it (the predecessor's last timestamp). */
  readonly floorMs: number;
  /** Unix ms on the host's clock: IDs are stamped below it. */
  readonly validUntilMs: number;
}

/** Options of IdFileGenerator. */
export interface IdFileGeneratorOptions {
  /** The host's wall clock in Unix ms (default Date.now). */
  clock?: () => number;
  /** Re-read the file when its last reading is this old on the monotonic clock, in ms (default 1000). */
  rereadMs?: number;
  /** How long to wait for a clock behind the floor or the last timestamp before ClockBehindError, in ms (default 5000). */
  maxClockWaitMs?: number;
  /** TESTING ONLY: break one rule on purpose. */
  _mutation?: 'ignore-valid-until' | 'ignore-floor' | 'ignore-version' | 'ignore-missing' | 'allow-backwards';
}

/** Snowflake IDs issued in this process under the broker's id file; synchronous. */
export class IdFileGenerator {
  constructor(path: string, options?: IdFileGeneratorOptions);
  readonly path: string;
  /** One ID. Throws NotHeldError, VersionChangedError or ClockBehindError. */
  nextId(): bigint;
  /** n (1..10000) strictly increasing IDs, or throws (RangeError for a bad n). */
  nextIds(n: number): bigint[];
  /** n IDs as nextIds, with the claim they were issued under. */
  nextBatch(n: number): Batch;
  /** The claim in use now; throws as nextId, without waiting for the clock. */
  claim(): Claim;
}

/** The IDs of one call and what they were issued under. */
export interface Batch {
  /** Strictly increasing. */
  readonly ids: bigint[];
  /** The node ID they carry. */
  readonly nodeId: number;
  /** The version (fencing token) they were issued under. */
  readonly version: number;
  /** IdFileGenerator: the claim every ID was issued under; HttpGenerator: null (the broker fences its IDs). */
  readonly claim: Claim | null;
}

/** Options of HttpGenerator. */
export interface HttpGeneratorOptions {
  /** Bound on each request, in ms (default 2000). */
  timeoutMs?: number;
  /** IDs fetched ahead, 1..10000: the next batch is fetched once half is used (default 0: off). */
  prefetch?: number;
  /** A prefetched batch is skipped once its fetch was sent this long ago, in ms on the monotonic clock (default 1000; null: no limit). */
  prefetchMaxAge?: number | null;
  /** TESTING ONLY: the monotonic clock in ms (default performance.now). */
  _now?: () => number;
  /** TESTING ONLY: break one rule on purpose. */
  _mutation?: 'prefetch-latest-version';
}

/** IDs from the broker's GET /ids over a keep-alive agent. */
export class HttpGenerator {
  /** url: the broker's base URL (e.g. http://127.0.0.1:8080) or its /ids URL; default: the NODEID_URL variable. */
  constructor(url?: string | URL | null, options?: HttpGeneratorOptions);
  /** One ID. Rejects with UnavailableError (503) or NodeIdError. */
  nextId(): Promise<bigint>;
  /** n (1..10000) strictly increasing IDs from one answer. */
  nextIds(n: number): Promise<bigint[]>;
  /** n IDs as nextIds, with the node ID and version of their answer (claim null). */
  nextBatch(n: number): Promise<Batch>;
  /** Destroys the agent's sockets and drops the prefetched IDs. */
  close(): void;
}

/** The parts of an ID. */
export interface Parts {
  /** Unix ms. */
  timeMs: number;
  nodeId: number;
  seq: number;
}

/** Splits an ID (a bigint or its decimal string) into its parts. */
export function decode(id: bigint | number | string): Parts;

/** Unix ms of the layout's epoch, 2025-01-01T00:00:00Z. */
export const EPOCH_MS: 1735689600000;

/** Every error this package raises on purpose. */
export class NodeIdError extends Error {}
/** No usable node ID now (file missing, garbage, expired): retry later. */
export class NotHeldError extends NodeIdError {}
/** The node ID's version changed: this generator stops for good. */
export class VersionChangedError extends NodeIdError {}
/** The clock stayed behind the floor or the last ID for too long. */
export class ClockBehindError extends NodeIdError {}
/** The broker answered 503 (it holds no valid lease now). */
export class UnavailableError extends NodeIdError {
  /** How long the broker asked to wait, in ms (its Retry-After). */
  readonly retryAfterMs: number;
}
