// Package s3wire tells S3 requests apart from the wire: the one classifier of
// the two proxies that sit between nodeid and an S3 server, nodeid-bench's
// latency proxy (cmd/nodeid-bench/internal/latproxy) and the fault suite's
// fault-injecting proxy (test/faults).
package s3wire

import (
	"net/http"
	"strings"
)

// Op is the S3 operation of a request, as Classify tells it from the method,
// the path and the conditional headers.
type Op string

// The operations Classify tells apart. nodeid's lease stores send only LIST,
// GET and the two conditional PUTs.
const (
	OpList   Op = "LIST"       // GET on a bucket: ListObjects(V2)
	OpGet    Op = "GET"        // GET on a key: GetObject
	OpHead   Op = "HEAD"       // HEAD on a bucket or a key
	OpCreate Op = "PUT-create" // PUT on a key with If-None-Match: create if absent
	OpUpdate Op = "PUT-update" // PUT on a key with If-Match: replace if unchanged
	OpPut    Op = "PUT"        // PUT on a key without a condition
	OpOther  Op = "OTHER"      // anything else: DELETE, POST, CreateBucket, ListBuckets, ?location
)

// Classify returns the operation of a path-style S3 request (/bucket or
// /bucket/key). A request without a bucket (ListBuckets) and a bucket's
// ?location query are OpOther. A PUT that carries If-None-Match is a create
// even if it also carries If-Match.
func Classify(r *http.Request) Op {
	path := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ := strings.Cut(path, "/")
	if bucket == "" {
		return OpOther
	}
	switch r.Method {
	case http.MethodGet:
		switch {
		case key != "":
			return OpGet
		case r.URL.Query().Has("location"):
			return OpOther // GetBucketLocation
		}
		return OpList
	case http.MethodHead:
		return OpHead
	case http.MethodPut:
		switch {
		case key == "":
			return OpOther // CreateBucket
		case r.Header.Get("If-None-Match") != "":
			return OpCreate
		case r.Header.Get("If-Match") != "":
			return OpUpdate
		}
		return OpPut
	}
	return OpOther
}
