package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// TestCommitFrom: the build's VCS stamp wins; without one, a `go run`
// binary (built now, or taken from the build cache) asks git in its source's directory for HEAD and whether tracked
// files were changed; any other unstamped binary, or no git, records
// nothing.
func TestCommitFrom(t *testing.T) {
	var calls [][]string
	git := func(status string) func(dir string, args ...string) (string, error) {
		return func(dir string, args ...string) (string, error) {
			calls = append(calls, append([]string{dir}, args...))
			if args[0] == "rev-parse" {
				return "0123456789abcdef0123456789abcdef01234567\n", nil
			}
			return status, nil
		}
	}
	noGit := func(dir string, args ...string) (string, error) { return "", errors.New("no git") }
	goRun := filepath.FromSlash("/tmp/go-build2926574538/b001/exe/kvbench")
	built := filepath.FromSlash("/tmp/kvbench")
	src := filepath.FromSlash("/src/bloomkv/cmd/kvbench/commit.go")

	stamp := []debug.BuildSetting{{Key: "vcs.revision", Value: "feedface"}, {Key: "vcs.modified", Value: "true"}}
	if c, m := commitFrom(stamp, built, src, git("")); c != "feedface" || !m || len(calls) != 0 {
		t.Errorf("stamped build: %q %v, git called %v", c, m, calls)
	}
	if c, m := commitFrom(nil, goRun, src, git("")); c != "0123456789abcdef0123456789abcdef01234567" || m {
		t.Errorf("go run, clean tree: %q %v", c, m)
	}
	cached := filepath.FromSlash("/root/.cache/go-build/c0/c096fbc83ccda4283c5cadcbbe32bc9610e00ab5952cbcb36876828cba211a91-d/kvbench")
	if c, m := commitFrom(nil, cached, src, git("")); c != "0123456789abcdef0123456789abcdef01234567" || m {
		t.Errorf("go run from the build cache, clean tree: %q %v", c, m)
	}
	if c, m := commitFrom(nil, goRun, src, git(" M db.go\n")); c == "" || !m {
		t.Errorf("go run, changed tree: %q %v", c, m)
	}
	if want := []string{filepath.Dir(src), "status", "--porcelain", "--untracked-files=no"}; !slices.Equal(calls[len(calls)-1], want) {
		t.Errorf("git called as %v, want %v", calls[len(calls)-1], want)
	}
	n := len(calls)
	if c, m := commitFrom(nil, built, src, git("")); c != "" || m || len(calls) != n {
		t.Errorf("unstamped go build binary: %q %v, git called %v", c, m, calls[n:])
	}
	if c, m := commitFrom(nil, goRun, "bloomkv/cmd/kvbench/commit.go", git("")); c != "" || m || len(calls) != n {
		t.Errorf("go run -trimpath: %q %v, git called %v", c, m, calls[n:])
	}
	if c, m := commitFrom(nil, goRun, src, noGit); c != "" || m {
		t.Errorf("no git: %q %v", c, m)
	}
}

// TestReportHeaderCommit: a report that records its commit prints it on
// the line under the first, marked when the tree had uncommitted changes;
// one without (every report written before it was recorded) prints
// exactly as before, and its JSON gains no commit field.
func TestReportHeaderCommit(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "kvbench", "default-1m.json")
	print := func(rep *report) []string {
		t.Helper()
		var out bytes.Buffer
		if err := printReport(&out, rep); err != nil {
			t.Fatal(err)
		}
		return strings.Split(out.String(), "\n")
	}
	rep, err := readReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Run.Commit != "" {
		t.Fatalf("%s records commit %q; the test wants a report from before commits were recorded", path, rep.Run.Commit)
	}
	before := print(rep)
	if !strings.HasPrefix(before[0], "kvbench  ") || !strings.HasPrefix(before[1], "data     ") {
		t.Fatalf("header without a commit:\n%s", strings.Join(before[:2], "\n"))
	}
	var js bytes.Buffer
	if err := writeJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js.String(), `"commit`) {
		t.Errorf("JSON of a report without a commit has a commit field")
	}

	for _, tc := range []struct {
		modified bool
		want     string
	}{
		{false, "commit   0123456789ab"},
		{true, "commit   0123456789ab, with uncommitted changes"},
	} {
		rep.Run.Commit, rep.Run.Modified = "0123456789abcdef0123456789abcdef01234567", tc.modified
		got := print(rep)
		want := slices.Insert(slices.Clone(before), 1, tc.want)
		if !slices.Equal(got, want) {
			t.Errorf("modified=%v: the report with a commit is not the one without plus %q under its first line:\n%s", tc.modified, tc.want, lineDiff(strings.Join(got, "\n"), strings.Join(want, "\n")))
		}
	}
}
