// nodeid-client: Snowflake IDs for Node.js from a nodeid-broker sidecar,
// either from its id file (IdFileGenerator) or its /ids endpoint
// (HttpGenerator). See README.md.

export { IdFileGenerator } from './lib/idfile.js';
export { HttpGenerator } from './lib/http.js';
export { decode, EPOCH_MS } from './lib/snowflake.js';
export { NodeIdError, NotHeldError, VersionChangedError, ClockBehindError, UnavailableError } from './lib/errors.js';
