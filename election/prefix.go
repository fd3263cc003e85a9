package election

// Dir is the folder, relative to the node-ID prefix, under which every election
// keeps its objects: <prefix>elections/<name>/cluster.json and 0.json. Node-ID
// code ignores these keys (lease.ParseRecordKey rejects them).
const Dir = "elections/"
