// An application that nodeid-broker run supervises, reading its node ID with
// nodeid_idfile.mjs as it would before issuing IDs:
//
//   nodeid-broker run --id-file /run/nodeid/id.json -- node example.mjs
//
// It prints the claim and exits 0 when the id file names the node ID and
// version the broker gave in the environment, else 1.

import { IDFile } from './nodeid_idfile.mjs';

const ids = new IDFile(process.env.NODEID_ID_FILE);
const claim = ids.claim(); // the broker wrote the file before starting us
if (claim === null) {
  console.error('no usable node ID in', ids.path);
  process.exit(1);
}
if (String(claim.nodeId) !== process.env.NODEID_NODE_ID || String(claim.version) !== process.env.NODEID_VERSION) {
  console.error('the id file names', claim, "not the environment's node ID");
  process.exit(1);
}
console.log(`node: node ${claim.nodeId} version ${claim.version}, usable for ${claim.validUntilMs - Date.now()} ms unless renewed`);
