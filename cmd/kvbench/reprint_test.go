package main

import "testing"

// checkReprint fails t unless `kvbench -report jsonPath` prints exactly
// the report the run that wrote jsonPath printed: the JSON holds all the
// text report needs.
func checkReprint(t *testing.T, jsonPath, printed string) {
	t.Helper()
	again, errs := runOK(t, "-report", jsonPath)
	if again != printed {
		t.Errorf("-report %s printed\n%s\nthe run printed\n%s\n(stderr: %s)", jsonPath, again, printed, errs)
	}
}
