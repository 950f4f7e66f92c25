package main

import (
	"sync"
	"testing"
)

// mapStore is a store that is only a Go map: the engine taken out, so a
// benchmark of the workload loops over it measures what the harness itself
// spends per operation (key and value generation, the value check, the
// latency histogram), the part of every engine's CPU time per operation
// that is not the engine's.
// Puts take a lock (fills may run several writers); Gets, which run only
// after the fill, do not.
type mapStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *mapStore) put(key, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[string(key)] = append([]byte(nil), value...)
	return nil
}

func (s *mapStore) get(key, dst []byte) ([]byte, bool, error) {
	v, ok := s.m[string(key)]
	return v, ok, nil
}

func (s *mapStore) newIter() (storeIter, error) { panic("mapStore: no iterators") }
func (s *mapStore) flush() error                { return nil }
func (s *mapStore) background() (any, bool)     { return nil, true }
func (s *mapStore) compactAll() error           { return nil }
func (s *mapStore) reopen(readPhase) error      { return nil }
func (s *mapStore) shape() treeShape            { return treeShape{} }
func (s *mapStore) counters() engineCounters    { return engineCounters{} }
func (s *mapStore) close() error                { return nil }

// BenchmarkHarnessGet is the harness's own cost per Get of readrandom and
// readmissing, against a map instead of an engine (the map lookup
// included), in wall time (ns/op) and in CPU time as the report measures
// it (cpu-ns/op): keep it in mind when reading a small CPU time per
// operation, or a ratio of two, in the report.
func BenchmarkHarnessGet(b *testing.B) {
	const num = 100_000
	ks := newKeySpace(num, 16, 100, 0.5)
	st := &mapStore{m: map[string][]byte{}}
	if _, err := fill(st, ks, fillSeq, 1, 1); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{readRandom, readMissing} {
		b.Run(name, func(b *testing.B) {
			rc := readConfig{ops: b.N, threads: 1, seed: 1, hitRatio: 0.5}
			b.ResetTimer()
			m, err := read(st, ks, name, rc)
			if err != nil {
				b.Fatal(err)
			}
			// The report's figure: CPU time over the loop, which the
			// machine's load moves less than ns/op.
			if m.CPUUsPerOp > 0 {
				b.ReportMetric(1e3*m.CPUUsPerOp, "cpu-ns/op")
			}
		})
	}
}

// TestMapStoreRead: the map store passes the harness's own checks (every
// present key found with its value, no absent key found), so the
// benchmark above times the real loop.
func TestMapStoreRead(t *testing.T) {
	ks := newKeySpace(2000, 16, 100, 0.5)
	st := &mapStore{m: map[string][]byte{}}
	if _, err := fill(st, ks, fillRandom, 2, 1); err != nil {
		t.Fatal(err)
	}
	if len(st.m) != 2000 {
		t.Fatalf("%d keys after the fill, want 2000", len(st.m))
	}
	for _, name := range []string{readRandom, readMissing} {
		m, err := read(st, ks, name, readConfig{ops: 3000, threads: 2, seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int64{readRandom: 3000, readMissing: 0}[name]; m.Found != want {
			t.Errorf("%s: found %d, want %d", name, m.Found, want)
		}
	}
}
