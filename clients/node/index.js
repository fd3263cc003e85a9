// nodeid-client for import: the CommonJS package (index.cjs) re-exported, so
// that require and import share one copy of each class (instanceof holds
// across both).

import cjs from './index.cjs';

export const {
  IdFileGenerator, HttpGenerator, decode, EPOCH_MS,
  NodeIdError, NotHeldError, VersionChangedError, ClockBehindError, UnavailableError,
} = cjs;

// The default export is the whole package, as `require` returns it, for
// `import nodeid from 'nodeid-client'`.
export default cjs;
