package lease

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
)

// NewWriteID returns a fresh random 64-bit write ID as 16 lowercase hex digits.
// Every write carries a new one, so every body (and ETag) is unique and a write
// whose outcome is unknown can be recognised when it is read back.
func NewWriteID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return fmt.Sprintf("%016x", binary.BigEndian.Uint64(b[:]))
}

// validWriteID reports whether s is 16 lowercase hex digits.
func validWriteID(s string) bool {
	if len(s) != 16 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
