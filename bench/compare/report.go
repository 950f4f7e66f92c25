package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// report is everything a run measured, printed as text and written as JSON.
type report struct {
	Date     string          `json:"date"`
	Note     string          `json:"note,omitempty"`
	Machine  machine         `json:"machine"`
	Engines  []engineVersion `json:"engines"`
	Flags    map[string]any  `json:"flags"`
	Settings map[string]any  `json:"settings"`
	// SettingNotes says, engine by engine, where defaults differ from the
	// equalized settings and what was set instead.
	SettingNotes []string        `json:"setting_notes"`
	Pairings     []pairingReport `json:"pairings"`
	Seconds      float64         `json:"seconds"`

	cfg *config
}

type machine struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPU        string `json:"cpu,omitempty"`
	Go         string `json:"go"`
}

type engineVersion struct {
	Name    string `json:"name"`
	Module  string `json:"module"`
	Version string `json:"version"`
}

// pairingReport is one durability pairing: who took part, configured how,
// every run, and the medians and ratios the table shows.
type pairingReport struct {
	Durability string            `json:"durability"`
	Writers    int               `json:"writers"`
	Readers    int               `json:"readers"`
	Engines    []string          `json:"engines"`
	Modes      map[string]string `json:"modes"`  // engine -> how it is configured
	Absent     map[string]string `json:"absent"` // engine -> why it is not in this pairing
	Runs       []engineRun       `json:"runs"`
	// Medians[engine][workload]: each figure is the median over the runs
	// of that figure alone.
	Medians map[string]map[string]measurement `json:"medians"`
	// Ratios[workload][peer] = bloomkv's median ops/s / the peer's.
	Ratios map[string]map[string]float64 `json:"ratios"`
}

func newReport(cfg *config) *report {
	s := cfg.settings
	rep := &report{
		Date: time.Now().UTC().Format(time.RFC3339),
		Note: cfg.note,
		Machine: machine{
			GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(),
			GOMAXPROCS: runtime.GOMAXPROCS(0), CPU: cpuModel(), Go: runtime.Version(),
		},
		Flags: cfg.flags,
		Settings: map[string]any{
			"block_size":                s.blockSize,
			"compression":               "snappy",
			"bloom_bits_per_key":        s.bloomBits,
			"filters_on_levels":         "all",
			"block_cache_bytes":         s.cacheSize,
			"memtable_bytes":            s.memtableSize,
			"immutable_memtables":       s.immutableMems,
			"l0_compaction_trigger":     s.l0Compaction,
			"l0_slowdown_writes":        s.l0Slowdown,
			"l0_stop_writes":            s.l0Stop,
			"lbase_max_bytes":           s.lBaseBytes,
			"level_multiplier":          s.multiplier,
			"target_file_size":          s.tableSize,
			"max_open_files":            s.maxOpenFiles,
			"read_triggered_compaction": readCompactionSetting(s),
		},
		cfg: cfg,
	}
	for _, e := range cfg.engines {
		rep.Engines = append(rep.Engines, engineVersion{Name: e.name, Module: e.module, Version: moduleVersion(e.module)})
		rep.SettingNotes = append(rep.SettingNotes, e.settingNotes(&s)...)
	}
	for _, d := range cfg.durabilities {
		p := pairingReport{
			Durability: d.String(), Writers: cfg.writersFor(d), Readers: cfg.threads,
			Modes: map[string]string{}, Absent: map[string]string{},
		}
		for _, e := range cfg.engines {
			how, ok := e.mode(d)
			if ok {
				p.Engines = append(p.Engines, e.name)
				p.Modes[e.name] = how
			} else {
				p.Absent[e.name] = how
			}
		}
		rep.Pairings = append(rep.Pairings, p)
	}
	return rep
}

// finish computes the medians and ratios.
func (rep *report) finish() {
	for i := range rep.Pairings {
		p := &rep.Pairings[i]
		p.Medians = map[string]map[string]measurement{}
		for _, name := range p.Engines {
			p.Medians[name] = map[string]measurement{}
			for _, w := range rep.cfg.workloads {
				var ms []measurement
				for _, r := range p.Runs {
					if m, ok := r.Results[w]; ok && r.Engine == name {
						ms = append(ms, m)
					}
				}
				if len(ms) > 0 {
					p.Medians[name][w] = medianOf(ms)
				}
			}
		}
		p.Ratios = map[string]map[string]float64{}
		base, ok := p.Medians[bloomkvEngine.name]
		if !ok {
			continue
		}
		for _, w := range rep.cfg.workloads {
			for _, peer := range p.Engines {
				m, ok := p.Medians[peer][w]
				b, bok := base[w]
				if peer == bloomkvEngine.name || !ok || !bok || m.OpsPerSec == 0 {
					continue
				}
				if p.Ratios[w] == nil {
					p.Ratios[w] = map[string]float64{}
				}
				p.Ratios[w][peer] = b.OpsPerSec / m.OpsPerSec
			}
		}
	}
}

// medianOf takes the median of each figure separately.
func medianOf(ms []measurement) measurement {
	med := func(f func(measurement) float64) float64 {
		xs := make([]float64, len(ms))
		for i, m := range ms {
			xs[i] = f(m)
		}
		slices.Sort(xs)
		if n := len(xs); n%2 == 1 {
			return xs[n/2]
		} else {
			return (xs[n/2-1] + xs[n/2]) / 2
		}
	}
	return measurement{
		Ops:       ms[0].Ops,
		Found:     int64(med(func(m measurement) float64 { return float64(m.Found) })),
		Elapsed:   time.Duration(med(func(m measurement) float64 { return float64(m.Elapsed) })),
		OpsPerSec: med(func(m measurement) float64 { return m.OpsPerSec }),
		P50us:     med(func(m measurement) float64 { return m.P50us }),
		P95us:     med(func(m measurement) float64 { return m.P95us }),
		P99us:     med(func(m measurement) float64 { return m.P99us }),
		P999us:    med(func(m measurement) float64 { return m.P999us }),
		MaxUs:     med(func(m measurement) float64 { return m.MaxUs }),
	}
}

// writeText prints the report: a header, the equalized settings, and one
// Markdown table per pairing.
func writeText(w io.Writer, rep *report) {
	cfg := rep.cfg
	fmt.Fprintf(w, "bench/compare, %s, %s/%s, %d CPUs (GOMAXPROCS %d), %s", rep.Date, rep.Machine.GOOS, rep.Machine.GOARCH,
		rep.Machine.NumCPU, rep.Machine.GOMAXPROCS, rep.Machine.Go)
	if rep.Machine.CPU != "" {
		fmt.Fprintf(w, ", %s", rep.Machine.CPU)
	}
	fmt.Fprintln(w)
	if rep.Note != "" {
		fmt.Fprintln(w, rep.Note)
	}
	var vers []string
	for _, e := range rep.Engines {
		vers = append(vers, e.Name+" "+e.Version)
	}
	fmt.Fprintln(w, strings.Join(vers, ", "))
	fmt.Fprintf(w, "%d keys (%d B keys, %d B values), %d ops per read workload (scan: seeks of %d entries), %d reader(s); ",
		cfg.num, cfg.keySize, cfg.valueSize, cfg.reads, cfg.scanLength, cfg.threads)
	if cfg.runs > 1 {
		fmt.Fprintf(w, "medians of %d runs (engines interleaved)\n", cfg.runs)
	} else {
		fmt.Fprintln(w, "one run")
	}
	s := cfg.settings
	fmt.Fprintf(w, "Equal settings: %s blocks, snappy, %d bloom bits/key on every level, %s block cache, %s memtable, L0 compaction at %d tables (stop at %d), level 1 target %s (x%d per level), %s tables, %d open files.\n",
		kib(int64(s.blockSize)), s.bloomBits, mib(s.cacheSize), mib(int64(s.memtableSize)), s.l0Compaction, s.l0Stop,
		mib(s.lBaseBytes), s.multiplier, mib(s.tableSize), s.maxOpenFiles)
	for _, n := range rep.SettingNotes {
		fmt.Fprintf(w, "  - %s\n", n)
	}

	for _, p := range rep.Pairings {
		fmt.Fprintf(w, "\n### %s (%d writer(s) per fill)\n\n", p.Durability, p.Writers)
		for _, name := range p.Engines {
			fmt.Fprintf(w, "- %s: %s\n", name, p.Modes[name])
		}
		for _, e := range cfg.engines {
			if why, ok := p.Absent[e.name]; ok {
				fmt.Fprintf(w, "- %s: not in this pairing: %s\n", e.name, why)
			}
		}
		if len(p.Engines) == 0 {
			continue
		}
		fmt.Fprintln(w)
		var peers []string
		for _, name := range p.Engines {
			if name != bloomkvEngine.name {
				peers = append(peers, name)
			}
		}
		_, haveBase := p.Medians[bloomkvEngine.name]
		head := []string{"workload"}
		align := []string{"---"}
		for _, name := range p.Engines {
			head = append(head, name+" ops/s", "p50 µs", "p99 µs")
			align = append(align, "--:", "--:", "--:")
		}
		if haveBase {
			for _, peer := range peers {
				head = append(head, "bloomkv/"+peer)
				align = append(align, "--:")
			}
		}
		fmt.Fprintf(w, "| %s |\n|%s|\n", strings.Join(head, " | "), strings.Join(align, "|"))
		for _, wl := range cfg.workloads {
			row := []string{wl}
			for _, name := range p.Engines {
				m, ok := p.Medians[name][wl]
				if !ok {
					row = append(row, "", "", "")
					continue
				}
				row = append(row, thousands(m.OpsPerSec), latency(m.P50us), latency(m.P99us))
			}
			if haveBase {
				for _, peer := range peers {
					if r, ok := p.Ratios[wl][peer]; ok {
						row = append(row, fmt.Sprintf("%.2fx", r))
					} else {
						row = append(row, "")
					}
				}
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
		fmt.Fprintln(w)
		for _, name := range p.Engines {
			for _, r := range p.Runs {
				if r.Engine != name || r.Settled == nil || r.Run != 1 {
					continue
				}
				fmt.Fprintf(w, "- %s tree for the reads (run 1): %s", name, r.Settled)
				if r.AfterReads != nil && !slices.Equal(r.AfterReads.TablesPerLevel, r.Settled.TablesPerLevel) {
					fmt.Fprintf(w, "; after the reads: %s (compacted while reads were timed)", r.AfterReads)
				}
				fmt.Fprintln(w)
			}
		}
	}
	fmt.Fprintf(w, "\nratio = bloomkv ops/s / peer ops/s (above 1: bloomkv is faster). Latencies are per operation; took %.0f s.\n", rep.Seconds)
}

func (t *treeShape) String() string {
	var parts []string
	for l, n := range t.TablesPerLevel {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("L%d %d", l, n))
		}
	}
	s := fmt.Sprintf("%s tables, %.1f MiB", strings.Join(parts, ", "), float64(t.TableBytes)/(1<<20))
	if t.OutsideCacheBytes > 0 {
		s += fmt.Sprintf(", %.2f MiB of filters held outside the block cache", float64(t.OutsideCacheBytes)/(1<<20))
	}
	return s
}

func writeJSON(path string, rep *report) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// thousands formats x rounded, with commas between thousands.
func thousands(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// latency formats microseconds with three significant digits or so.
func latency(us float64) string {
	switch {
	case us < 10:
		return fmt.Sprintf("%.2f", us)
	case us < 100:
		return fmt.Sprintf("%.1f", us)
	}
	return thousands(us)
}

func kib(n int64) string { return fmt.Sprintf("%d KiB", n>>10) }

// moduleVersion returns the version of module path this binary was built
// with; for a module replaced by a directory (bloomkv here) the repository's
// commit, when git can tell.
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path != path {
			continue
		}
		if d.Replace == nil {
			return d.Version
		}
		if v := d.Replace.Version; v != "" && v != "(devel)" {
			return v
		}
		return "=> " + d.Replace.Path + gitCommit(bi)
	}
	return "unknown"
}

// gitCommit describes the repository's commit: from the build's VCS stamp
// when there is one (go build), else from git (go run, go test), else "".
func gitCommit(bi *debug.BuildInfo) string {
	var rev string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		out, err := exec.Command("git", "rev-parse", "HEAD").Output()
		if err != nil {
			return ""
		}
		rev = strings.TrimSpace(string(out))
		st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
		modified = err == nil && len(st) > 0
	}
	s := " (commit " + rev[:min(12, len(rev))]
	if modified {
		s += ", with uncommitted changes"
	}
	return s + ")"
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// readCompactionSetting describes the read-triggered compactions of a run.
func readCompactionSetting(s settings) string {
	if s.noReadCompactions {
		return "off where the engine allows (-no_read_compactions): bloomkv and Pebble read the tree the fill left; goleveldb v1.0.0 cannot turn its off"
	}
	return "on in every engine (each one's default); reads may reshape a tree while they are timed, so the report prints each tree before and after the reads"
}
