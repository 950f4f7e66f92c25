package main

import (
	"os"
	"strconv"
	"strings"
)

// loadAverage returns the system's 1-minute load average from
// /proc/loadavg, or nil where there is none (not Linux). On a shared
// machine it says how much other work the timings competed with; the
// report prints it at the start and the end of the run.
func loadAverage() *float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	first, _, _ := strings.Cut(string(data), " ")
	v, err := strconv.ParseFloat(first, 64)
	if err != nil {
		return nil
	}
	return &v
}
