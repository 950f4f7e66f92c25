package bloomkv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADME keeps the README's promises to a newcomer: its first two
// commands are the ones documented (.ci/run greps for the second), and its
// Go example compiles against this module as written. Example in
// example_test.go runs the same program; this test catches the copy
// drifting from the API.
func TestREADME(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	for _, cmd := range []string{
		"go run ./cmd/kvbench",
		"go test ./... && (cd bench/compare && go test ./...) && (cd server && go test ./...)",
	} {
		if !strings.Contains(readme, "\n"+cmd+" ") {
			t.Errorf("README lacks the command line %q", cmd)
		}
	}
	if n := strings.Count(readme, "\n"); n > 150 {
		t.Errorf("README has %d lines; issue 30 keeps the front page at most 150 (write-ups go to docs/)", n)
	}
	for _, link := range []string{"docs/benchmarks.md", "docs/studying-filters.md", "go get github.com/bloomkv/bloomkv@"} {
		if !strings.Contains(readme, link) {
			t.Errorf("README lacks %q", link)
		}
	}

	const open = "```go\npackage main\n"
	i := strings.Index(readme, open)
	if i < 0 {
		t.Fatal("README has no ```go block with a main package")
	}
	src := readme[i+len("```go\n"):]
	src = src[:strings.Index(src, "```")]
	if testing.Short() {
		t.Skip("compiling the README's example needs the go command: skipped with -short")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	// Inside the module, so that the import resolves to this checkout.
	dir, err := os.MkdirTemp(".", "readme-example-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(goCmd, "build", "-o", os.DevNull, "./"+filepath.Base(dir)).CombinedOutput()
	if err != nil {
		t.Fatalf("the README's example does not compile: %v\n%s\n%s", err, out, src)
	}
}
