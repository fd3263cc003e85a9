// Types of nodeid-client for import (index.js): those of index.cjs.

export * from './index.cjs';
