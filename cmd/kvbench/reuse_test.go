package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTinyFreshRunIsNotReused: a database kvbench creates and fills itself
// is never reported as reused, however small. Tiny tables spend more
// filter bits per key than asked (every filter has a minimum size and a
// trailer), which once passed for a database filled with other settings.
func TestTinyFreshRunIsNotReused(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		bits []float64 // the bloom_bits every read result must carry
	}{
		{"plain", []string{"-num", "2"}, []float64{10}},
		{"plain 100 keys", []string{"-num", "100", "-bloom_bits", "4"}, []float64{4}},
		{"compare", []string{"-num", "2", "-compare_filters"}, []float64{10}},
		{"sweep", []string{"-num", "2", "-sweep", "off,4,10"}, []float64{-1, 4, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jsonPath := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"-progress=false", "-json", jsonPath}, tc.args...)
			stdout, _ := runOK(t, args...)
			if strings.Contains(stdout, "WARNING") {
				t.Errorf("warning on a database kvbench filled itself:\n%s", stdout)
			}
			doc := readJSON(t, jsonPath)
			if w, _ := doc["warnings"].([]any); len(w) != 0 {
				t.Errorf("JSON warnings: %v", w)
			}
			var got []float64
			for _, r := range resultsOf(t, doc) {
				if r["pass"] != "load" && r["benchmark"] == "readmissing" {
					got = append(got, num(t, r, "bloom_bits"))
				}
			}
			if len(got) == 0 {
				t.Fatal("no readmissing result")
			}
			for i, b := range got {
				want := tc.bits[min(i, len(tc.bits)-1)]
				if b != want {
					t.Errorf("readmissing result %d: bloom_bits %v, want %v (the setting the tables were written with)", i, b, want)
				}
			}
		})
	}
}
