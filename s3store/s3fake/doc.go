// Package s3fake runs an embedded S3 server for tests and demos: gofakes3 with
// its in-memory backend (s3mem), listening on a local address, with a bucket
// created up front. gofakes3 honours If-None-Match and If-Match on PutObject
// atomically, which is all nodeid needs; it answers 412 (where AWS answers 404)
// for If-Match on a missing key. A PUT replaces the object's metadata, as on S3
// (s3mem alone would keep the old object's, an x-amz-checksum-* of the old
// body among them), and one whose checksum header does not match its body is
// refused with 400 BadDigest: a stored checksum is always the body's, whoever
// wrote it.
//
// The server can run on a fake clock ([Config.Now], for example a [Clock]). That
// takes four things, all done here: one clock passed to gofakes3 (Last-Modified
// of GET) and to s3mem (LastModified of LIST), the request time-skew check turned
// off (the SDK signs requests with the real time), and the HTTP Date header set
// from the same clock before gofakes3 runs (net/http only adds a Date header
// when the handler set none).
//
// The demo broker's --embedded-s3 ADDR flag uses [Start]; tests use it with
// Addr "" (a free port on 127.0.0.1).
package s3fake
