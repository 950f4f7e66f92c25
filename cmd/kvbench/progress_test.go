package main

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestProgressLines: without a terminal, progress is plain lines with
// count, share, rate and ETA, and a final "done" line.
func TestProgressLines(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(true, false, &buf)
	p.lineInterval = 20 * time.Millisecond
	var n atomic.Int64
	stop := p.start("fill", 1000, "keys", n.Load)
	for range 5 {
		n.Add(100)
		time.Sleep(15 * time.Millisecond)
	}
	n.Store(1000)
	stop()
	out := buf.String()
	if !strings.Contains(out, "fill: done, 1000 keys in") {
		t.Errorf("no final line:\n%s", out)
	}
	if !strings.Contains(out, "of 1000 keys (") || !strings.Contains(out, "ETA") {
		t.Errorf("no intermediate line with share and ETA:\n%s", out)
	}
	if strings.Contains(out, "\r") || strings.Contains(out, "\x1b") {
		t.Errorf("plain progress holds terminal control characters: %q", out)
	}
}

func TestProgressOffIsSilent(t *testing.T) {
	var buf bytes.Buffer
	stop := newProgress(false, true, &buf).start("fill", 10, "keys", func() int64 { return 5 })
	stop()
	if buf.Len() != 0 {
		t.Errorf("progress off wrote %q", buf.String())
	}
}

// TestProgressBar drives the terminal bar into a buffer: it must render
// and finish with a newline, also when the estimate was low.
func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(true, true, &buf)
	p.tick = 5 * time.Millisecond
	stop := p.start("recompact", 100, unitBytes, func() int64 { return 150 })
	time.Sleep(30 * time.Millisecond)
	stop()
	if out := buf.String(); !strings.Contains(out, "recompact") || !strings.HasSuffix(out, "\n") {
		t.Errorf("bar output %q", out)
	}
}

func TestProgressLineFormat(t *testing.T) {
	got := progressLine("fill", 250, 1000, "keys", 10*time.Second)
	want := "fill: 250 keys of 1000 keys (25%), 25 keys/s, 10s elapsed, ETA 30s"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func FuzzParseSweep(f *testing.F) {
	for _, s := range []string{"off,2,4,6,8,10,12,16", "0,2", "", "10", "1,,2", "-1", "x", "65"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bits, err := parseSweep(s)
		if err != nil {
			return
		}
		for _, b := range bits {
			if b != -1 && (b < 1 || b > 64) { // -1: no filter; 0 is refused

				t.Fatalf("parseSweep(%q) accepted %d", s, b)
			}
		}
	})
}

func FuzzParseBenchmarks(f *testing.F) {
	for _, s := range []string{"fillrandom,readrandom,readmissing", "scan", "readmixed,fillseq", ",", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := parseBenchmarks(s)
		if err != nil {
			return
		}
		seenRead := false
		for _, n := range names {
			if !isFill(n) {
				seenRead = true
			} else if seenRead {
				t.Fatalf("parseBenchmarks(%q) = %v: a fill after a read", s, names)
			}
		}
	})
}
