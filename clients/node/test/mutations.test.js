// Each testing-only mutation must make some test of idfile.test.js fail.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const file = fileURLToPath(new URL('./idfile.test.js', import.meta.url));

for (const m of ['ignore-valid-until', 'ignore-floor', 'ignore-version', 'ignore-missing', 'allow-backwards']) {
  test(`mutation ${m} is caught by idfile.test.js`, () => {
    const env = { ...process.env, NODEID_TEST_MUTATION: m };
    delete env.NODE_TEST_CONTEXT; // a test run of its own, not a child reporting to this one
    const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', file], { env, encoding: 'utf8' });
    assert.notEqual(r.status, 0, `idfile.test.js passed with ${m}`);
    assert.match(r.stdout, /^not ok \d+ - rule/m);
  });
}
