// Package minio holds the integration tests that run the lease.Store conformance
// suite (lease/storetest) on s3store against real S3 servers, MinIO and
// versitygw, and optionally an S3 endpoint of your own. servers.sh in this folder
// builds pinned versions of both servers, starts them on 127.0.0.1 and prints the
// environment the tests read. The package has no non-test code; see
// docs/evidence/s3-testing.md.
package minio
