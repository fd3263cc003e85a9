// nodeid-client for import: the CommonJS package (index.cjs) re-exported, so
// that require and import share one copy of each class (instanceof holds
// across both).

import cjs from './index.cjs';

export const {
  IdFileGenerator, HttpGenerator, decode, EPOCH_MS,
  NodeIdError, NotHeldError, VersionChangedError, ClockBehindError, UnavailableError,
} = cjs;
