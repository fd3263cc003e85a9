package doccheck

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The word limits that keep the docs readable in an hour: the README, and
// one operator's path (running the broker, the clients, nodeidctl,
// deploying, choosing the lease, metrics and alerts: docs/*.md and
// deploy/README.md) with the one platform page that operator deploys on
// (deploy/<platform>.md; an ECS operator's is deploy/README.md itself). The
// evidence under docs/evidence/ is out of that path and not counted.
const (
	readmeWordLimit   = 2000
	operatorWordLimit = 19500
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

// platformPage reports whether doc (relative to the repository) is one
// platform's deploy page, which only that platform's operators read.
func platformPage(doc string) bool {
	dir, file := filepath.Split(doc)
	return filepath.Clean(dir) == "deploy" && file != "README.md"
}

// TestWordCounts fails when the README passes 2,000 words, or an operator's
// path (docs/*.md and deploy/README.md, with the longest platform page)
// 19,500: what an operator must read grows only by cutting elsewhere, or by
// moving evidence to docs/evidence/; a new platform's page adds nothing to
// another platform's path.
func TestWordCounts(t *testing.T) {
	if n := words(t, "README.md"); n > readmeWordLimit {
		t.Errorf("README.md has %d words, more than %d: link to docs/ instead", n, readmeWordLimit)
	}
	docs := operatorDocs(t)
	core, longest, longestPage := 0, 0, ""
	var each []string
	for _, d := range docs {
		n := words(t, d)
		each = append(each, d+" "+strconv.Itoa(n))
		switch {
		case !platformPage(d):
			core += n
		case n > longest:
			longest, longestPage = n, d
		}
	}
	if len(docs) < 4 || !strings.Contains(strings.Join(docs, " "), filepath.Join("docs", "nodeid-broker.md")) || longestPage == "" {
		t.Fatalf("the operator's path is %v", docs)
	}
	if total := core + longest; total > operatorWordLimit {
		t.Errorf("an operator's path has %d words (%d shared, %d in %s), more than %d (%s): cut repetition, or move evidence to docs/evidence/",
			total, core, longest, longestPage, operatorWordLimit, strings.Join(each, ", "))
	}
	t.Logf("an operator's path: %d words shared, %d in the longest platform page (%s)", core, longest, longestPage)
}
