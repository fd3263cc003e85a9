// Loading: `import` (named and default) and `require` give the same classes,
// so that instanceof holds whichever way an application or its libraries
// load the package.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

import nodeid, { HttpGenerator, IdFileGenerator, decode, NodeIdError } from '../index.js';

const required = createRequire(import.meta.url)('../index.cjs');

test('import default, import named and require share one copy', () => {
  assert.deepEqual(Object.keys(nodeid).sort(), Object.keys(required).sort());
  for (const [name, value] of Object.entries({ HttpGenerator, IdFileGenerator, decode, NodeIdError })) {
    assert.equal(nodeid[name], value, `default export's ${name}`);
    assert.equal(required[name], value, `require's ${name}`);
  }
});
