package doccheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// root is the repository, from this package.
const root = "../.."

// bin holds the commands the docs describe, built once by TestMain:
// nodeid-broker, demo-broker and nodeidctl.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nodeid-doccheck-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, name := range []string{"nodeid-broker", "demo-broker", "nodeidctl"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), filepath.Join(root, "cmd", name)).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", name, err, out)
			_ = os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	bin = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// command returns the path of a built command.
func command(name string) string { return filepath.Join(bin, name) }

// read returns a file of the repository.
func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
