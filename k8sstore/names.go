package k8sstore

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Lease names must be DNS subdomains (RFC 1123: at most 253 characters of
// a-z, 0-9, '-' and '.', in labels that start and end with a letter or a
// digit), while nodeid's keys are paths ("elections/x/7.json"). A name is
// the prefix and the key, Prefix+key, with each byte mapped on its own:
// a lowercase letter, a digit and '.' stand for themselves, and every other
// byte ('-', '/', an uppercase letter, ...) is '-' and its two lowercase hex
// digits ("/" is "-2f"). No code is the start of another, so the mapping is
// injective and decodes back, and the name of Prefix+key starts with the
// name of Prefix, so a List keeps the names that start with it. A path
// whose name is not a DNS subdomain (too long, or a label that would start
// or end with '-' or be empty, as after "a./") is refused.

// maxNameLen is the longest Lease name (a DNS subdomain).
const maxNameLen = validation.DNS1123SubdomainMaxLength

// errName is matched by the error of a prefix or key that maps to no Lease
// name.
var errName = errors.New("k8sstore: not a Lease name")

// encode maps a path to its Lease name, unchecked.
func encode(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "-%02x", c)
	}
	return b.String()
}

func plain(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' }

// decode returns the path of a name, and false for a name encode never
// gives (a '-' without two lowercase hex digits, or escaping a plain byte).
func decode(name string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case plain(c):
			b.WriteByte(c)
		case c == '-' && i+2 < len(name):
			v, ok := unhex(name[i+1], name[i+2])
			if !ok || plain(v) {
				return "", false
			}
			b.WriteByte(v)
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}

func unhex(hi, lo byte) (byte, bool) {
	d := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		}
		return 0, false
	}
	h, ok1 := d(hi)
	l, ok2 := d(lo)
	return h<<4 | l, ok1 && ok2
}

// nameOf returns the Lease name of path, or an error matching errName that
// says why there is none.
func nameOf(path string) (string, error) {
	n := encode(path)
	if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
		if len(n) > maxNameLen {
			return "", fmt.Errorf("%w: %q maps to a name of %d characters, longer than %d: shorten the prefix or key", errName, path, len(n), maxNameLen)
		}
		return "", fmt.Errorf("%w: %q maps to %q, not a DNS subdomain (a '.' next to a byte other than a-z or 0-9, or at an end): %s", errName, path, n, errs[0])
	}
	return n, nil
}

// checkPrefix reports whether prefix can start a Lease name: its name
// followed by a letter must be a valid name of no more than 200 characters,
// leaving keys at least 53.
func checkPrefix(prefix string) error {
	n := encode(prefix)
	if len(n) > 200 {
		return fmt.Errorf("Prefix %q maps to %d characters of a Lease name, want at most 200 (names are at most 253)", prefix, len(n))
	}
	if errs := validation.IsDNS1123Subdomain(n + "a"); len(errs) > 0 {
		return fmt.Errorf("Prefix %q maps to %q, which cannot start a Lease name (a DNS subdomain): start it with a-z or 0-9 and keep '.' between letters or digits", prefix, n)
	}
	return nil
}
