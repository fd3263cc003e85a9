// Types of nodeid-client for import (index.js): those of index.cjs.

export * from './index.cjs';

import * as nodeid from './index.cjs';
/** The whole package, as `require('nodeid-client')` returns it. */
export default nodeid;
