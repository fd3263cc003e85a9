// validate.mjs: validates CloudFormation templates offline with AWS
// CloudFormation Validate (npm @aws/cloudformation-validate: AWS's resource
// schemas and rules, compiled to WASM, no network, no credentials).
// validate.sh installs the package (test/cfn-validate.sh) and runs
//
//   node deploy/cloudformation/validate.mjs PACKAGE_DIR TEMPLATE...
//
// where PACKAGE_DIR is the directory npm installed the package into. Every
// finding of severity WARN or above is printed, and counts as an error
// (strict: warnings are raised to errors); INFO notes (tags, create-only
// properties) are left out. Exit 0 when there is none, 1 otherwise, 2 on a
// usage error.

import { createRequire } from 'node:module';
import { join } from 'node:path';

const [dir, ...templates] = process.argv.slice(2);
if (!dir || templates.length === 0) {
  console.error('usage: node validate.mjs PACKAGE_DIR TEMPLATE...');
  process.exit(2);
}
const require = createRequire(join(dir, 'package.json'));
const { RegoEngine, TemplateFile } = require('@aws/cloudformation-validate');

const engine = new RegoEngine();
let failed = 0;
try {
  for (const path of templates) {
    const report = engine.validateStandard(new TemplateFile(path), { strict: true, severityLevel: 'WARN' });
    for (const d of report.diagnostics) {
      const what = d.entity?.logicalId ? ` ${d.entity.logicalId} ${d.propertyPath ?? ''}` : '';
      console.log(`${path}:${d.startLine ?? '?'}: [${d.severity}] ${d.ruleId}${what}: ${d.message}`);
      failed++;
    }
    console.log(`${path}: ${report.diagnostics.length} finding(s) of severity WARN or above`);
  }
} finally {
  engine.free();
}
process.exit(failed > 0 ? 1 : 0);
