package main

import (
	"errors"
	"runtime/debug"
	"slices"
	"testing"
)

// TestCommitFrom: the build's VCS stamp wins; without one, git's HEAD and
// whether tracked files were changed; without either, nothing.
func TestCommitFrom(t *testing.T) {
	var calls [][]string
	git := func(status string) func(args ...string) (string, error) {
		return func(args ...string) (string, error) {
			calls = append(calls, args)
			if args[0] == "rev-parse" {
				return "0123456789abcdef0123456789abcdef01234567\n", nil
			}
			return status, nil
		}
	}
	noGit := func(args ...string) (string, error) { return "", errors.New("no git") }

	stamp := []debug.BuildSetting{{Key: "vcs.revision", Value: "feedface"}, {Key: "vcs.modified", Value: "true"}}
	if c, m := commitFrom(stamp, git("")); c != "feedface" || !m || len(calls) != 0 {
		t.Errorf("stamped build: %q %v, git called %v", c, m, calls)
	}
	if c, m := commitFrom(nil, git("")); c != "0123456789abcdef0123456789abcdef01234567" || m {
		t.Errorf("clean tree: %q %v", c, m)
	}
	if c, m := commitFrom(nil, git(" M db.go\n")); c == "" || !m {
		t.Errorf("changed tree: %q %v", c, m)
	}
	if want := []string{"status", "--porcelain", "--untracked-files=no"}; !slices.Equal(calls[len(calls)-1], want) {
		t.Errorf("git status called as %v, want %v", calls[len(calls)-1], want)
	}
	if c, m := commitFrom(nil, noGit); c != "" || m {
		t.Errorf("no git: %q %v", c, m)
	}
}
