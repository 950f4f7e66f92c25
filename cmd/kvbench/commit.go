package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
)

// The commit a run was built from, so that a committed JSON report names
// the code that produced it (issue 31: every published table says the
// commit and the command it came from).
//
// Where it comes from:
//
//   - `go run ./cmd/kvbench` stamps no VCS information, but builds from the
//     source as it is at that moment: kvbench asks git in the directory its
//     source was compiled from (not the one it runs in), which works in a
//     linked git worktree too. The docs' commands run it this way.
//   - a binary from `go build` carries a VCS stamp (vcs.revision,
//     vcs.modified) with -buildvcs=auto (the default) or -buildvcs=true,
//     but not where GOFLAGS says -buildvcs=false (`go env GOFLAGS`), and
//     not in a linked git worktree, whose .git is a file the go command
//     does not recognize: it stamps nothing there, or, in a worktree nested
//     in another checkout, that checkout's commit (golang/go#58218);
//   - any other binary without a stamp was built from a tree that may
//     have changed since, so nothing is recorded rather than a guess.

// buildCommit returns the commit of the binary's source and whether the
// working tree had uncommitted changes (see above); "" when it cannot
// tell.
func buildCommit() (string, bool) {
	var settings []debug.BuildSetting
	if bi, ok := debug.ReadBuildInfo(); ok {
		settings = bi.Settings
	}
	exe, _ := os.Executable()
	_, src, _, _ := runtime.Caller(0)
	return commitFrom(settings, exe, src, func(dir string, args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
		return string(out), err
	})
}

// isGoRun tells whether exe is a binary `go run` built: one it built just
// now, in its temporary work directory (.../go-buildNNN/bNNN/exe/NAME), or
// one it took from the build cache (Go 1.24 on: GOCACHE/xx/HASH-d/NAME),
// which it does only when the cached binary was built from the same
// source as it would build now.
func isGoRun(exe string) bool {
	dir := filepath.Dir(exe)
	if filepath.Base(dir) == "exe" && strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(dir))), "go-build") {
		return true
	}
	return cachedExe.MatchString(filepath.Base(dir)) && cacheShard.MatchString(filepath.Base(filepath.Dir(dir)))
}

var (
	cachedExe  = regexp.MustCompile(`^[0-9a-f]{64}-d$`)
	cacheShard = regexp.MustCompile(`^[0-9a-f]{2}$`)
)

// commitFrom is buildCommit over a build's settings, the executable's
// path, the path of a source file as compiled (runtime.Caller) and a way
// to run git in a directory.
func commitFrom(settings []debug.BuildSetting, exe, src string, git func(dir string, args ...string) (string, error)) (string, bool) {
	var rev string
	modified := false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		return rev, modified
	}
	// Without a stamp, only a `go run` binary whose source path is a real
	// directory (not -trimpath's module path) can be asked about.
	if !isGoRun(exe) || !filepath.IsAbs(src) {
		return "", false
	}
	dir := filepath.Dir(src)
	out, err := git(dir, "rev-parse", "HEAD")
	if err != nil {
		return "", false
	}
	rev = strings.TrimSpace(out)
	status, err := git(dir, "status", "--porcelain", "--untracked-files=no")
	return rev, err == nil && strings.TrimSpace(status) != ""
}
