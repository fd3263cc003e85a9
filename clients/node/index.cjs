'use strict';

// nodeid-client: Snowflake IDs for Node.js from a nodeid-broker sidecar,
// either from its id file (IdFileGenerator) or its /ids endpoint
// (HttpGenerator). See README.md.

const { IdFileGenerator } = require('./lib/idfile.cjs');
const { HttpGenerator } = require('./lib/http.cjs');
const { decode, EPOCH_MS } = require('./lib/snowflake.cjs');
const { NodeIdError, NotHeldError, VersionChangedError, ClockBehindError, UnavailableError } = require('./lib/errors.cjs');

module.exports = { IdFileGenerator, HttpGenerator, decode, EPOCH_MS, NodeIdError, NotHeldError, VersionChangedError, ClockBehindError, UnavailableError };
