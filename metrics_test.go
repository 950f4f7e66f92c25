package bloomkv

import (
	"testing"
	"time"
)

// Tests of metrics.go: the Metrics snapshot, its String table and Sub.

func TestMetricsStringAndSub(t *testing.T) {
	m := Metrics{
		Levels: []LevelMetrics{
			{Files: 2, Bytes: 3 << 20, TablesProbed: 150, FilterNegatives: 148, FilterFalsePositives: 1, DataBlockReads: 2,
				FilterBitsPerKey: 14.25, FilterBytes: 40 << 10},
			{Files: 5, Bytes: 10 << 20, CompactionBytesIn: 7 << 20, CompactionBytesOut: 6 << 20, Compactions: 3,
				TablesProbed: 100, FilterNegatives: 52, DataBlockReads: 50, FilterBitsPerKey: 9.5, FilterBytes: 300 << 10},
		},
		Gets:                 100,
		TablesProbed:         250,
		FilterNegatives:      200,
		FilterFalsePositives: 1,
		DataBlockReads:       52,
		UserBytesWritten:     1000,
		WALBytesWritten:      1100,
		WALRecords:           10,
		WALSyncs:             10,
		Flushes:              2,
		WriteStallTime:       1500 * time.Microsecond,
	}
	const want = `level  files        size   comp-in  comp-out  compactions |   probed  filter-neg  filter-fp   blocks
    0      2     3.0 MiB       0 B       0 B            0 |      150         148          1        2
    1      5      10 MiB   7.0 MiB   6.0 MiB            3 |      100          52          0       50
total      7      13 MiB       0 B       0 B            0 |      250         200          1       52
gets 100: tables probed 250, filter negatives 200, false positives 1, data blocks 52 (cache hits 0, misses 0), bytes read 0 B, memtable hits 0
iterators: 0 seeks (0 prefix seeks: tables probed 0, filter negatives 0, false positives 0), data blocks 0, bytes read 0 B
writes: user 1000 B, wal 1.1 KiB in 10 records (10 syncs), flushed 0 B, compacted 0 B, write amplification 1.10; flushes 2, stalls 0 (1.5ms), slowdowns 0
filter bits/key for new tables by level: 14.25 9.50; filter memory by level: 40 KiB 300 KiB
memory: filters 0 B (0 keys; 0 B resident), block cache 0 B, memtables 0 B, open tables 0 (opens 0, re-opens 0, 0 B read)
`
	if got := m.String(); got != want {
		t.Fatalf("Metrics.String() changed:\n%s\nwant:\n%s", got, want)
	}
	earlier := m
	earlier.Levels = append([]LevelMetrics(nil), m.Levels...)
	m.Gets, m.FilterNegatives = 150, 260
	m.Levels[1].Compactions = 5
	m.Levels[1].FilterNegatives = 60
	d := m.Sub(earlier)
	if d.Gets != 50 || d.FilterNegatives != 60 || d.Levels[1].Compactions != 2 || d.Levels[1].Files != 5 || d.Levels[1].FilterNegatives != 8 {
		t.Fatalf("Sub: %+v", d)
	}
}
