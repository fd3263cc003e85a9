package lease

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// MaxObjectSize is the largest body the codec accepts, in bytes. A lease record
// with knownNodes for 1024 IDs is about 30 KiB.
const MaxObjectSize = 256 << 10

// decodeStrict decodes exactly one JSON object from data into v, refusing unknown
// fields, trailing data and oversized bodies.
func decodeStrict(data []byte, v any) error {
	if len(data) > MaxObjectSize {
		return corruptf("body of %d bytes exceeds %d", len(data), MaxObjectSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return corruptf("bad JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return corruptf("trailing data after the JSON object")
	}
	return nil
}
