package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/filter"
)

// Range-filter workloads (issue 27). Each operation is one bounded seek:
// SetBounds(lo, hi) then SeekGE(lo) on one reused iterator, and for
// scanbounded the Next calls to the end of the range.
//
// Widths are in the integer universe range filters index: the first 8
// bytes of a key, big-endian (filter.RangeKey), which for kvbench keys is
// the part that orders them (keySpace.key). Present keys lie about
// 2^64/(2*num) apart there, so a range of -range_width integers between
// two of them is empty for any width up to about 2^40 at a million keys.
const (
	// scanEmpty seeks an empty range of -range_width integers at a uniform
	// place between two adjacent present keys.
	scanEmpty = "scanempty"
	// scanEmptyNear seeks an empty range that starts right after a present
	// key (its integer plus one): the case that breaks prefix-based range
	// filters, whose prefixes of the range are the key's.
	scanEmptyNear = "scanemptynear"
	// scanBounded scans the non-empty range from a random present key to
	// the key -scan_length keys later (exclusive), with both bounds set, so
	// that every level's range filter is asked and says "maybe": what the
	// filters cost a scan they cannot help.
	scanBounded = "scanbounded"
)

// isRangeWorkload reports whether name is one of the range-filter
// workloads.
func isRangeWorkload(name string) bool {
	return name == scanEmpty || name == scanEmptyNear || name == scanBounded
}

// rangeConfig holds the range-filter flags.
type rangeConfig struct {
	rangeWidth      uint64  // -range_width
	rangeFilterBits float64 // -range_filter_bits
	// -range_sweep and -range_widths (rangesweep.go): as given, and
	// parsed.
	rangeSweepFlag, rangeWidthsFlag string
	rangeSweep                      []float64
	rangeWidths                     []uint64
}

func (rc *rangeConfig) register(fs *flag.FlagSet) {
	fs.Uint64Var(&rc.rangeWidth, "range_width", 64, "scanempty, scanemptynear: width of each empty range, in integers of the first 8 key bytes (what range filters index); at most 2^40")
	fs.StringVar(&rc.rangeSweepFlag, "range_sweep", "", "comma list of range-filter bits per key (2 to 48): load once, then for each setting recompact all tables with range filters of that budget and run the empty-range workloads at each of -range_widths (rangesweep.go); -plot charts measured against theoretical false-positive rates")
	fs.StringVar(&rc.rangeWidthsFlag, "range_widths", "", "with -range_sweep: comma list of empty-range widths (default: -range_width)")
	fs.Float64Var(&rc.rangeFilterBits, "range_filter_bits", 0, "range filter bits per key in the tables written (Options.RangeFilterBitsPerKey, 2 to 48; 0 = none); -compare_filters reads the same tables with and without them")
}

func (rc *rangeConfig) validate() error {
	switch {
	case rc.rangeWidth < 1 || rc.rangeWidth > 1<<40:
		return fmt.Errorf("-range_width %d outside [1, 2^40]", rc.rangeWidth)
	case rc.rangeFilterBits != 0 && !(rc.rangeFilterBits >= filter.MinRangeBitsPerKey && rc.rangeFilterBits <= filter.MaxRangeBitsPerKey):
		return fmt.Errorf("-range_filter_bits %g outside [%d, %d] (0 = none)", rc.rangeFilterBits, filter.MinRangeBitsPerKey, filter.MaxRangeBitsPerKey)
	}
	return rc.parseRangeSweep()
}

// prefixOf returns the integer of slot's key: its first 8 bytes.
func (ks *keySpace) prefixOf(slot uint64) uint64 {
	return slot*ks.stride + mix64(slot)%ks.stride
}

// emptyRange returns an empty range [lo, hi) of width integers: between
// present keys i and i+1 at random, or starting just after key i (near).
func (r *runner) emptyRange(rng *rand.Rand, near bool, lo, hi []byte) ([]byte, []byte) {
	w := r.cfg.rangeWidth
	i := rng.IntN(r.ks.num - 1)
	a, b := r.ks.prefixOf(presentSlot(i)), r.ks.prefixOf(presentSlot(i+1))
	start := a + 1
	if !near && b-a > w+1 {
		start += rng.Uint64N(b - a - w) // start + w <= b
	}
	lo = binary.BigEndian.AppendUint64(lo[:0], start)
	hi = binary.BigEndian.AppendUint64(hi[:0], start+w)
	return lo, hi
}

// rangeLoop runs n operations of a range workload on one iterator and
// returns the entries found (0 for the empty-range workloads of a
// database this run filled: anything else is an error).
func (r *runner) rangeLoop(db *bloomkv.DB, name string, n int64, rng *rand.Rand,
	hist *hdrhistogram.Histogram, done *atomic.Int64, failed *atomic.Bool) (int64, error) {
	if r.ks.rows > 0 {
		return 0, fmt.Errorf("%s: not with -rows", name)
	}
	it := db.NewIterator(nil)
	var lo, hi []byte
	var found int64
	for i := range n {
		if failed.Load() {
			break
		}
		if name == scanBounded {
			k := rng.IntN(r.ks.num - 1)
			lo = r.ks.key(lo, presentSlot(k))
			hi = r.ks.key(hi, presentSlot(min(k+r.cfg.scanLength, r.ks.num-1)))
		} else {
			lo, hi = r.emptyRange(rng, name == scanEmptyNear, lo, hi)
		}
		t0 := time.Now()
		it.SetBounds(lo, hi)
		got := int64(0)
		for ok := it.SeekGE(lo); ok; ok = it.Next() {
			got++
		}
		recordLatency(hist, time.Since(t0))
		if err := it.Error(); err != nil {
			it.Close()
			return found, fmt.Errorf("seek %d: %w", i, err)
		}
		if r.fresh && name != scanBounded && got != 0 {
			it.Close()
			return found, fmt.Errorf("%s: the range [%x, %x) holds %d keys, want none", name, lo, hi, got)
		}
		found += got
		done.Add(1)
	}
	return found, it.Close()
}

// setRangeFigures fills the range-filter figures of a range workload.
func (r *result) setRangeFigures(run *workloadRun, d bloomkv.Metrics) {
	if !isRangeWorkload(run.name) {
		return
	}
	rf := d.RangeFilter
	r.RangeWidth, r.RangeFilterBits = run.rangeWidth, run.rangeBits
	r.RangeFilterProbesPerOp = ratio(rf.Probes, uint64(run.ops))
	r.RangeFilterNegativesPerOp = ratio(rf.Negatives, uint64(run.ops))
	r.RangeFilterFPRMeasured = ratio(rf.FalsePositives, rf.FalsePositives+rf.Negatives)
	if run.name != scanBounded && run.rangeBits > 0 && rf.Probes > 0 {
		th := filter.RangeFilterTheory(run.rangeBits, run.rangeWidth)
		r.RangeFilterFPRTheory = &th
	}
	for _, l := range d.Levels {
		r.RangeFilterFPRMeasuredByLevel = append(r.RangeFilterFPRMeasuredByLevel, l.RangeFilter.FPR())
	}
}

// writeRangeCosts shows the range workloads' range-filter figures.
func writeRangeCosts(sb *strings.Builder, results []*result) {
	t := &table{}
	t.add("range filters", "bits/key", "width", "ops/s", "probes/seek", "negatives/seek", "FPR", "FPR theory", "data blocks/seek")
	n := 0
	for _, r := range results {
		if r.RangeFilterProbesPerOp == nil {
			continue
		}
		n++
		t.add(label(r), fmt.Sprintf("%g", r.RangeFilterBits), fmt.Sprintf("%d", r.RangeWidth), fmt.Sprintf("%.0f", r.OpsPerSec),
			fmtFloat(r.RangeFilterProbesPerOp, 3), fmtFloat(r.RangeFilterNegativesPerOp, 3), fmtFloat(r.RangeFilterFPRMeasured, 4),
			fmtFloat(r.RangeFilterFPRTheory, 4), fmtFloat(r.DataBlocksPerOp, 4))
	}
	if n == 0 {
		return
	}
	_ = t.write(sb)
	sb.WriteString("\n")
}
