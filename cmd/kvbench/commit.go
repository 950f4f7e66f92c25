package main

import (
	"os/exec"
	"runtime/debug"
	"strings"
)

// The commit a run was built from, so that a committed JSON report names
// the code that produced it (issue 31: every published table says the
// commit and the command it came from).

// buildCommit returns the commit of the binary's source and whether the
// working tree had uncommitted changes: from the build's VCS stamp when
// there is one (go build with -buildvcs), else from git in the directory
// kvbench runs in, which is the source's for `go run ./cmd/kvbench` from
// the repository. "" when neither can tell.
func buildCommit() (string, bool) {
	var settings []debug.BuildSetting
	if bi, ok := debug.ReadBuildInfo(); ok {
		settings = bi.Settings
	}
	return commitFrom(settings, func(args ...string) (string, error) {
		out, err := exec.Command("git", args...).Output()
		return string(out), err
	})
}

// commitFrom is buildCommit over a build's settings and a way to run git.
func commitFrom(settings []debug.BuildSetting, git func(args ...string) (string, error)) (string, bool) {
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
	out, err := git("rev-parse", "HEAD")
	if err != nil {
		return "", false
	}
	rev = strings.TrimSpace(out)
	status, err := git("status", "--porcelain", "--untracked-files=no")
	return rev, err == nil && strings.TrimSpace(status) != ""
}
