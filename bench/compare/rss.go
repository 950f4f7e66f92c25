package main

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

// Memory on the record (issue 25): every engine runs in this one process,
// so before each engine's databases the harness frees what the previous
// engine left (a GC and returning free pages to the OS) and resets the
// kernel's peak-RSS mark (writing 5 to /proc/self/clear_refs), then samples
// /proc/self/status while the engine runs. The figures include the
// harness's own few MiB (the key space's value pool, the fill's shuffled
// order), the same for every engine. Outside Linux they are zero.

// rssPeak is one engine run's peak memory.
type rssPeak struct {
	// PeakRSS is the kernel's high-water mark (VmHWM) since the reset:
	// anonymous memory plus mapped file pages. bloomkv's memory-mapped
	// tables count here as they are touched (they are page cache, which
	// the peers read through pread without mapping).
	PeakRSS int64 `json:"peak_rss"`
	// PeakAnon is the highest anonymous resident memory sampled (RssAnon,
	// every 20 ms): heap, caches, memtables, without mapped files.
	PeakAnon int64 `json:"peak_anon"`
}

type rssSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	mu   sync.Mutex
	peak rssPeak
}

// freeMemory returns the previous phase's garbage to the OS, so that a
// phase does not run with the last one's collection ahead of it.
func freeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

func startRSS() *rssSampler {
	freeMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	s := &rssSampler{stop: make(chan struct{})}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) sample() {
	st := procStatus()
	s.mu.Lock()
	s.peak.PeakAnon = max(s.peak.PeakAnon, st["RssAnon"])
	s.peak.PeakRSS = max(s.peak.PeakRSS, st["VmHWM"])
	s.mu.Unlock()
}

func (s *rssSampler) finish() rssPeak {
	close(s.stop)
	s.done.Wait()
	s.sample()
	return s.peak
}

// procStatus reads the memory lines of /proc/self/status, in bytes.
func procStatus() map[string]int64 {
	out := map[string]int64{}
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		f := bytes.Fields(v)
		if len(f) == 2 && string(f[1]) == "kB" {
			if n, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
				out[string(k)] = n << 10
			}
		}
	}
	return out
}
