package main

import (
	"fmt"
	"time"
)

// One settle rule for every engine, so that each starts its timed reads
// from a tree its own background work has finished with:
//
//  1. with -settle compact, a full manual compaction (every engine has one);
//  2. flush the memtable;
//  3. poll the engine's background work (store.background) until nothing
//     has run, run or been due for settleQuiet.
//
// settleQuiet is longer than bloomkv's IdleCompactionDelay (1 s), the only
// timer-driven compaction among the engines, so that a reader arriving
// settleQuiet after the last write finds whatever an engine does on its own
// once writes stop already done, in every engine alike; before, the harness
// waited up to 30 s for bloomkv's level 0 to empty and 300 ms for the others.
//
// settleQuiet is set by -settle_quiet (2 s; the tests wait less), and
// passed on to child processes with the other flags.
var (
	settlePoll    = 50 * time.Millisecond
	settleQuiet   = 2 * time.Second
	settleTimeout = 10 * time.Minute
)

func settle(st store, compact bool) error {
	if compact {
		if err := st.compactAll(); err != nil {
			return fmt.Errorf("full compaction: %w", err)
		}
	}
	if err := st.flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return waitQuiet(st.background)
}

// waitQuiet polls read until it reports idle with the same (comparable)
// state for settleQuiet.
func waitQuiet(read func() (state any, idle bool)) error {
	deadline := time.Now().Add(settleTimeout)
	var last any
	var quietSince time.Time
	for {
		state, idle := read()
		switch {
		case !idle || state != last:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = time.Now()
		case time.Since(quietSince) >= settleQuiet:
			return nil
		}
		last = state
		if time.Now().After(deadline) {
			return fmt.Errorf("background work still running after %s", settleTimeout)
		}
		time.Sleep(min(settlePoll, settleQuiet/3))
	}
}
