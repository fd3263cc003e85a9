package snowflake

import (
	"fmt"
	"strconv"
	"time"
)

// An ID is a Snowflake ID: a non-negative int64 holding a millisecond
// timestamp, a node ID and a sequence number (see Layout). IDs from one
// generator increase with every call; IDs from different nodes are ordered by
// time to within the clocks' disagreement.
//
// Time, NodeID and Seq decode with DefaultLayout: for IDs of another layout
// use Layout.Decode. The ID's text and JSON forms are its decimal digits;
// JSON writes a string ("123"), because JavaScript numbers lose precision
// above 2^53, and reads both a string and a number.
type ID int64

// Int64 returns id as an int64.
func (id ID) Int64() int64 { return int64(id) }

// String returns the decimal form of id, the form Parse reads.
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }

// Time returns the timestamp of id under DefaultLayout.
func (id ID) Time() time.Time {
	return time.UnixMilli(DefaultEpochMs + int64(id)>>(defaultNodeBits+defaultSequenceBits))
}

// NodeID returns the node ID of id under DefaultLayout.
func (id ID) NodeID() int64 {
	return int64(id) >> defaultSequenceBits & (1<<defaultNodeBits - 1)
}

// Seq returns the sequence number of id under DefaultLayout.
func (id ID) Seq() int64 { return int64(id) & (1<<defaultSequenceBits - 1) }

const (
	defaultNodeBits     = 10
	defaultSequenceBits = 12
)

// Parse reads the decimal form of an ID, as String writes it: digits only,
// no sign, no leading zero (except "0" itself), no spaces, at most
// math.MaxInt64. Being strict makes the form canonical: when Parse succeeds,
// String gives back s exactly. Errors wrap ErrInvalidID.
//
// The decimal form does not depend on the layout; Layout.Parse also decodes.
func Parse(s string) (ID, error) {
	if len(s) == 0 || len(s) > 19 {
		return 0, invalidText(s, "want 1 to 19 decimal digits")
	}
	if s[0] == '0' && len(s) > 1 {
		return 0, invalidText(s, "leading zero")
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, invalidText(s, "not a decimal digit")
		}
		n = n*10 + uint64(c-'0') // 19 digits fit a uint64
	}
	if n > 1<<63-1 {
		return 0, invalidText(s, "larger than the largest int64")
	}
	return ID(n), nil
}

// Decode splits id into its parts under DefaultLayout; see Layout.Decode.
func Decode(id ID) (Parts, error) { return DefaultLayout().Decode(id) }

func invalidText(s, why string) error {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return fmt.Errorf("%w %q: %s", ErrInvalidID, s, why)
}

// MarshalText implements encoding.TextMarshaler: the decimal form.
func (id ID) MarshalText() ([]byte, error) {
	if id < 0 {
		return nil, fmt.Errorf("%w: %d is negative", ErrInvalidID, int64(id))
	}
	return strconv.AppendInt(nil, int64(id), 10), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with Parse.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// MarshalJSON writes id as a JSON string of its decimal digits, "123":
// JavaScript numbers are doubles and would silently round an ID above 2^53.
func (id ID) MarshalJSON() ([]byte, error) {
	if id < 0 {
		return nil, fmt.Errorf("%w: %d is negative", ErrInvalidID, int64(id))
	}
	b := make([]byte, 0, 21)
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(id), 10)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a JSON string ("123") or a JSON number (123) holding
// the decimal form of an ID, as Parse does. JSON null leaves id unchanged,
// as encoding/json does for other types. Anything else wraps ErrInvalidID.
func (id *ID) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*id = v
	return nil
}
