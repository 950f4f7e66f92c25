package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"
)

// progressMode says how long phases report progress on stderr.
type progressMode int

const (
	progressOff   progressMode = iota
	progressLines              // plain lines every few seconds: logs, CI, pipes
	progressBar                // a redrawn bar with rate and ETA: terminals
)

// progress starts phase reporters. Work loops never call into it: they
// bump a counter (or the engine's metrics move) and a reporter goroutine
// samples current(), so the timed loop pays for one atomic add at most.
type progress struct {
	mode         progressMode
	w            io.Writer
	tick         time.Duration // bar redraw period
	lineInterval time.Duration // time between plain lines
}

func newProgress(enabled, terminal bool, w io.Writer) *progress {
	p := &progress{w: w, tick: 100 * time.Millisecond, lineInterval: 5 * time.Second}
	switch {
	case !enabled:
		p.mode = progressOff
	case terminal:
		p.mode = progressBar
	default:
		p.mode = progressLines
	}
	return p
}

// unit names what current() counts; "bytes" prints sizes.
const unitBytes = "bytes"

// start reports the phase name until the returned stop is called. total
// is the expected final count, or <= 0 when unknown (a spinner, no ETA).
func (p *progress) start(name string, total int64, unit string, current func() int64) (stop func()) {
	if p.mode == progressOff {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	begin := time.Now()
	if p.mode == progressBar {
		bar := p.newBar(name, total, unit)
		go func() {
			defer wg.Done()
			t := time.NewTicker(p.tick)
			defer t.Stop()
			for {
				select {
				case <-quit:
					cur := current()
					if total > 0 && cur > total {
						bar.ChangeMax64(cur)
					}
					_ = bar.Set64(cur)
					_ = bar.Finish()
					if total <= 0 {
						fmt.Fprintln(p.w)
					}
					return
				case <-t.C:
					cur := current()
					if total > 0 && cur > bar.GetMax64() {
						bar.ChangeMax64(cur) // an estimate was low: grow rather than overflow
					}
					_ = bar.Set64(cur)
				}
			}
		}()
	} else {
		go func() {
			defer wg.Done()
			t := time.NewTicker(p.lineInterval)
			defer t.Stop()
			for {
				select {
				case <-quit:
					cur := current()
					el := time.Since(begin)
					fmt.Fprintf(p.w, "%s: done, %s in %s (%s/s)\n", name, formatCount(cur, unit),
						el.Round(time.Millisecond), formatCount(int64(float64(cur)/max(el.Seconds(), 1e-9)), unit))
					return
				case <-t.C:
					fmt.Fprintln(p.w, progressLine(name, current(), total, unit, time.Since(begin)))
				}
			}
		}()
	}
	return func() {
		close(quit)
		wg.Wait()
	}
}

func (p *progress) newBar(name string, total int64, unit string) *progressbar.ProgressBar {
	max := total
	if max <= 0 {
		max = -1 // spinner
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(fmt.Sprintf("%-22s", name)),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(p.tick),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
	}
	if unit == unitBytes {
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowTotalBytes(true), progressbar.OptionUseIECUnits(true))
	} else {
		opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit))
	}
	return progressbar.NewOptions64(max, opts...)
}

// progressLine is one plain progress line: count, share, rate and ETA
// when the total is known.
func progressLine(name string, cur, total int64, unit string, elapsed time.Duration) string {
	rate := float64(cur) / max(elapsed.Seconds(), 1e-9)
	s := fmt.Sprintf("%s: %s", name, formatCount(cur, unit))
	if total > 0 {
		s += fmt.Sprintf(" of %s (%.0f%%)", formatCount(total, unit), 100*float64(cur)/float64(total))
	}
	s += fmt.Sprintf(", %s/s, %s elapsed", formatCount(int64(rate), unit), elapsed.Round(time.Second))
	if total > 0 && rate > 0 && cur < total {
		eta := time.Duration(float64(total-cur) / rate * float64(time.Second))
		s += fmt.Sprintf(", ETA %s", eta.Round(time.Second))
	}
	return s
}

func formatCount(n int64, unit string) string {
	if unit == unitBytes {
		return humanize.IBytes(uint64(n))
	}
	return fmt.Sprintf("%d %s", n, unit)
}
