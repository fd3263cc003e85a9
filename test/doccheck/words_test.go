package doccheck

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The word limits that keep the docs readable in an hour: the README, and
// the operator's path (running the broker, the clients, nodeidctl, deploying,
// choosing the lease, metrics and alerts). The evidence under docs/evidence/
// is out of that path and not counted.
const (
	readmeWordLimit   = 2000
	operatorWordLimit = 20000
)

// words counts a file's words as wc -w does: tokens between whitespace.
func words(t *testing.T, path string) int {
	t.Helper()
	return len(strings.Fields(read(t, path)))
}

// operatorDocs returns the operator's path: docs/*.md and deploy/**/*.md,
// relative to the repository.
func operatorDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(filepath.Join(root, "deploy"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			docs = append(docs, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		docs[i], _ = filepath.Rel(root, d)
	}
	return docs
}

// TestWordCounts fails when the README passes 2,000 words, or the operator's
// path (docs/*.md and deploy/**/*.md together) 20,000: what a new operator
// must read grows only by cutting elsewhere, or by moving evidence to
// docs/evidence/.
func TestWordCounts(t *testing.T) {
	if n := words(t, "README.md"); n > readmeWordLimit {
		t.Errorf("README.md has %d words, more than %d: link to docs/ instead", n, readmeWordLimit)
	}
	docs := operatorDocs(t)
	total := 0
	var each []string
	for _, d := range docs {
		n := words(t, d)
		total += n
		each = append(each, d+" "+strconv.Itoa(n))
	}
	if len(docs) < 4 || !strings.Contains(strings.Join(docs, " "), filepath.Join("docs", "nodeid-broker.md")) {
		t.Fatalf("the operator's path is %v", docs)
	}
	if total > operatorWordLimit {
		t.Errorf("docs/*.md and deploy/**/*.md have %d words, more than %d (%s): cut repetition, or move evidence to docs/evidence/",
			total, operatorWordLimit, strings.Join(each, ", "))
	}
}
