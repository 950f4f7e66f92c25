package raftstore

import (
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"
)

// The benchmarks compare this store with raft-boltdb at equal durability:
// every write of either is fsynced before it returns (bolt commits with
// fsync by default; this store applies with WriteOptions{Sync: true}).
// Entries carry 256 bytes of data, a typical small command.
//
//	go test -run '^$' -bench . -benchtime 2s -count 5 ./raftstore

func benchLogs(first uint64, n int) []*raft.Log {
	logs := make([]*raft.Log, n)
	data := make([]byte, 256)
	for i := range logs {
		logs[i] = &raft.Log{Index: first + uint64(i), Term: 1, Type: raft.LogCommand, Data: data}
	}
	return logs
}

// fill stores entries [1, n] in big batches.
func fill(b *testing.B, s raft.LogStore, n int) {
	for i := 0; i < n; i += 10000 {
		if err := s.StoreLogs(benchLogs(uint64(i+1), min(10000, n-i))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStoreLogs1(b *testing.B)  { benchEach(b, benchStoreLogs(1)) }
func BenchmarkStoreLogs64(b *testing.B) { benchEach(b, benchStoreLogs(64)) }
func BenchmarkGetLog(b *testing.B)      { benchEach(b, benchGetLog) }
func BenchmarkDeleteRange(b *testing.B) { benchEach(b, benchDeleteRange) }

func benchEach(b *testing.B, fn func(b *testing.B, s raft.LogStore)) {
	for _, im := range impls {
		if !im.persistent {
			continue
		}
		b.Run(im.name, func(b *testing.B) {
			s, done := im.open(b, b.TempDir())
			defer done()
			fn(b, s)
		})
	}
}

func benchStoreLogs(n int) func(b *testing.B, s raft.LogStore) {
	return func(b *testing.B, s raft.LogStore) {
		next := uint64(1)
		b.SetBytes(int64(n * 256))
		for b.Loop() {
			logs := benchLogs(next, n)
			next += uint64(n)
			if err := s.StoreLogs(logs); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchGetLog(b *testing.B, s raft.LogStore) {
	const n = 10000
	fill(b, s, n)
	rng := rand.New(rand.NewPCG(1, 2))
	var l raft.Log
	for b.Loop() {
		if err := s.GetLog(1+rng.Uint64N(n), &l); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDeleteRange deletes 64 entries per op from the front of the log, as
// raft compacts after a snapshot.
func benchDeleteRange(b *testing.B, s raft.LogStore) {
	const per = 64
	n := 0
	lo := uint64(1)
	for b.Loop() {
		if lo+per > uint64(n) {
			b.StopTimer()
			fill2 := 64 * 1000
			if err := s.StoreLogs(benchLogs(uint64(n+1), fill2)); err != nil {
				b.Fatal(err)
			}
			n += fill2
			b.StartTimer()
		}
		if err := s.DeleteRange(lo, lo+per-1); err != nil {
			b.Fatal(err)
		}
		lo += per
	}
}
