package main

import (
	"math"
	"testing"
	"time"
)

// TestSummarizeQuantiles: on 1..10000 µs the quantiles are the matching
// values within the histogram's 0.1% precision, and out-of-range values
// are clamped rather than dropped.
func TestSummarizeQuantiles(t *testing.T) {
	h := newLatencyHistogram()
	for i := 1; i <= 10000; i++ {
		recordLatency(h, time.Duration(i)*time.Microsecond)
	}
	recordLatency(h, 2*time.Hour)
	recordLatency(h, 0)
	if h.TotalCount() != 10002 {
		t.Fatalf("recorded %d values, want 10002", h.TotalCount())
	}
	s := summarize(h)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"p50", s.P50, 5000}, {"p95", s.P95, 9500}, {"p99", s.P99, 9900}, {"p99.9", s.P999, 9990}} {
		if math.Abs(c.got-c.want)/c.want > 0.002 {
			t.Errorf("%s = %.1f µs, want %.0f", c.name, c.got, c.want)
		}
	}
	if s.Max < 59e6 || s.Max > 61e6 {
		t.Errorf("max %.0f µs: a 2 h stall should be clamped to a minute", s.Max)
	}
}

func BenchmarkRecordLatency(b *testing.B) {
	h := newLatencyHistogram()
	b.ReportAllocs()
	for i := range b.N {
		recordLatency(h, time.Duration(i%100_000))
	}
}
