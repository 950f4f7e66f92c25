package main

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds, from 1 ns to a minute, with three
// significant digits: quantiles are exact to 0.1%.
const (
	latencyMin     = 1
	latencyMax     = int64(time.Minute)
	latencyDigits  = 3
	nanosPerMicros = 1e3
)

func newLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(latencyMin, latencyMax, latencyDigits)
}

// recordLatency records d, clamped into the histogram's range (a stall
// longer than a minute is recorded as a minute rather than dropped).
func recordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(min(max(int64(d), latencyMin), latencyMax))
}

// latencySummary is what the report prints of a histogram, in microseconds.
type latencySummary struct {
	P50, P95, P99, P999, Mean, Max float64
}

func summarize(h *hdrhistogram.Histogram) latencySummary {
	us := func(ns int64) float64 { return float64(ns) / nanosPerMicros }
	return latencySummary{
		P50:  us(h.ValueAtQuantile(50)),
		P95:  us(h.ValueAtQuantile(95)),
		P99:  us(h.ValueAtQuantile(99)),
		P999: us(h.ValueAtQuantile(99.9)),
		Mean: h.Mean() / nanosPerMicros,
		Max:  us(h.Max()),
	}
}
