package s3fake

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"hash/crc64"
	"io"
	"maps"
	"strings"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// putKeysKey is the metadata entry, never served, that names the metadata
// keys the last PUT of an object sent. gofakes3's header filter only keeps
// X-Amz-*, Content-Type, Content-Disposition and Content-Encoding from a
// request, so no client can send it.
const putKeysKey = "Nodeid-Fake-Put-Keys"

// replacingBackend is s3mem with S3's rule for metadata on a PUT: the new
// object has the metadata of its own request and nothing else. s3mem merges
// in the metadata of the object it replaces, so a PUT that sends no checksum,
// or another algorithm's, kept the old body's x-amz-checksum-* header, and
// every read of the new body failed the SDK's checksum check. Each PUT here
// records which keys it sent, and every read serves only those.
type replacingBackend struct {
	*s3mem.Backend
}

// PutObject stores the object with a record of the metadata keys sent,
// after checking the body against any checksum sent with it: a mismatch is
// refused with 400 BadDigest, as S3 does, so a stored checksum is always the
// body's.
func (b replacingBackend) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	body, err := gofakes3.ReadAll(input, size)
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	for k, v := range meta {
		if sum, ok := checksums[k]; ok && base64.StdEncoding.EncodeToString(sum(body)) != v {
			return gofakes3.PutObjectResult{}, gofakes3.ErrorMessage(gofakes3.ErrBadDigest, k+" does not match the body")
		}
	}
	sent := make([]string, 0, len(meta))
	for k := range meta {
		if k != putKeysKey {
			sent = append(sent, k)
		}
	}
	own := maps.Clone(meta)
	if own == nil {
		own = map[string]string{}
	}
	own[putKeysKey] = strings.Join(sent, ",")
	return b.Backend.PutObject(bucket, key, own, bytes.NewReader(body), size, cond)
}

// checksums computes each x-amz-checksum-* header S3 knows from a body, by
// the metadata key gofakes3 stores the header under.
var checksums = map[string]func([]byte) []byte{
	"X-Amz-Checksum-Crc32": func(b []byte) []byte { return binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b)) },
	"X-Amz-Checksum-Crc32c": func(b []byte) []byte {
		return binary.BigEndian.AppendUint32(nil, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	},
	"X-Amz-Checksum-Crc64nvme": func(b []byte) []byte {
		return binary.BigEndian.AppendUint64(nil, crc64.Checksum(b, crc64NVME))
	},
	"X-Amz-Checksum-Sha1":   func(b []byte) []byte { s := sha1.Sum(b); return s[:] },
	"X-Amz-Checksum-Sha256": func(b []byte) []byte { s := sha256.Sum256(b); return s[:] },
}

// crc64NVME is the table of CRC-64/NVME (S3's CRC64NVME), its polynomial
// 0xAD93D23594C93659 reflected.
var crc64NVME = crc64.MakeTable(0x9A6C9329AC4BC9B5)

// CopyObject copies through this backend's GetObject and PutObject, so the
// copy's metadata is the source's as served plus the request's.
func (b replacingBackend) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	return gofakes3.CopyObject(b, srcBucket, srcKey, dstBucket, dstKey, meta)
}

// GetObject serves the object with the metadata of its own PUT only.
func (b replacingBackend) GetObject(bucket, key string, rng *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	return ownMetadata(b.Backend.GetObject(bucket, key, rng))
}

// HeadObject is as GetObject, without the body.
func (b replacingBackend) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	return ownMetadata(b.Backend.HeadObject(bucket, key))
}

// GetObjectVersion is as GetObject for one version.
func (b replacingBackend) GetObjectVersion(bucket, key string, v gofakes3.VersionID, rng *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	return ownMetadata(b.Backend.GetObjectVersion(bucket, key, v, rng))
}

// HeadObjectVersion is as HeadObject for one version.
func (b replacingBackend) HeadObjectVersion(bucket, key string, v gofakes3.VersionID) (*gofakes3.Object, error) {
	return ownMetadata(b.Backend.HeadObjectVersion(bucket, key, v))
}

// ownMetadata replaces obj's metadata (shared with the stored object) by a
// copy holding only the keys its PUT sent. An object stored without the
// record (none is, through this backend) keeps all of its metadata.
func ownMetadata(obj *gofakes3.Object, err error) (*gofakes3.Object, error) {
	if err != nil || obj == nil {
		return obj, err
	}
	list, ok := obj.Metadata[putKeysKey]
	if !ok {
		return obj, nil
	}
	own := make(map[string]string)
	for k := range strings.SplitSeq(list, ",") {
		if v, ok := obj.Metadata[k]; ok {
			own[k] = v
		}
	}
	c := *obj
	c.Metadata = own
	return &c, nil
}
