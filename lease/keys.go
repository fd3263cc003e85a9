package lease

import (
	"strconv"
	"strings"
)

// ManifestKey is the key of the cluster manifest, relative to the prefix.
const ManifestKey = "cluster.json"

// RecordKey returns the key of the lease object for node ID id ("7.json").
func RecordKey(id int) string { return strconv.Itoa(id) + ".json" }

// ParseRecordKey returns the node ID of a lease object key, and false for any key
// that is not exactly a canonical decimal ID followed by ".json" (the manifest,
// "07.json", "-1.json" and foreign objects all give false).
func ParseRecordKey(key string) (int, bool) {
	digits, ok := strings.CutSuffix(key, ".json")
	if !ok || digits == "" || len(digits) > 7 {
		return 0, false
	}
	id, err := strconv.Atoi(digits)
	if err != nil || id < 0 || strconv.Itoa(id) != digits {
		return 0, false
	}
	return id, true
}
