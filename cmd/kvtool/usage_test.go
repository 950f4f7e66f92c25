package main

import (
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args   []string
		code   int
		stderr string // a fragment stderr must hold
	}{
		{nil, exitUsage, "usage: kvtool COMMAND"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"check"}, exitUsage, "want exactly one database directory"},
		{[]string{"check", dir, dir}, exitUsage, "got 2 arguments"},
		{[]string{"check", "-nope", dir}, exitUsage, "flag provided but not defined"},
		{[]string{"sst"}, exitUsage, "usage: kvtool sst"},
		{[]string{"manifest", "-json", dir}, exitUsage, "flag provided but not defined"},
		{[]string{"check", "-h"}, exitOK, "-strict"},
		{[]string{"repair"}, exitUsage, "want exactly one database directory"},
		{[]string{"repair", "-strict", dir}, exitUsage, "flag provided but not defined"},
		{[]string{"repair", "-h"}, exitOK, "-json"},
		{[]string{"help"}, exitOK, ""},
	}
	for _, c := range cases {
		code, _, errOut := runTool(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.stderr) {
			t.Errorf("kvtool %q: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, c.code, c.stderr)
		}
	}
}
