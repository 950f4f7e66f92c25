//go:build race

package filter

// raceEnabled trims the statistical tests under -race, which slows the
// millions of probes they make tenfold and adds nothing to them: they run
// on one goroutine. The concurrency tests run in full.
const raceEnabled = true
