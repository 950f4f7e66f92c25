package main

import (
	"bufio"
	"encoding/json"
	"fmt"
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
	Date string `json:"date"`
	Note string `json:"note,omitempty"`
	// Command is the command line that produced the report, as the
	// published tables print it.
	Command  string          `json:"command"`
	Params   params          `json:"params"`
	Machine  machine         `json:"machine"`
	Engines  []engineVersion `json:"engines"`
	Flags    map[string]any  `json:"flags"`
	Settings map[string]any  `json:"settings"`
	// SettingNotes says, engine by engine, where defaults differ from the
	// equalized settings and what was set instead.
	SettingNotes []string        `json:"setting_notes"`
	Pairings     []pairingReport `json:"pairings"`
	Seconds      float64         `json:"seconds"`
	// LoadStart and LoadEnd are the 1-minute load averages when the run
	// began and ended (absent outside Linux, and in reports made before
	// these fields). The machine is shared: they say how much other work
	// the timings met, which the published runs used to note by hand.
	LoadStart *float64 `json:"load_average_start,omitempty"`
	LoadEnd   *float64 `json:"load_average_end,omitempty"`
}

// params is what the text report needs of the configuration, so that it
// can be printed again from the JSON alone (-report).
type params struct {
	Num              int      `json:"num"`
	KeySize          int      `json:"key_size"`
	ValueSize        int      `json:"value_size"`
	CompressionRatio float64  `json:"compression_ratio"`
	Reads            int      `json:"reads"`
	ScanLength       int      `json:"scan_length"`
	Threads          int      `json:"threads"`
	Runs             int      `json:"runs"`
	Workloads        []string `json:"workloads"`
	Engines          []string `json:"engines"`
	// Settings, Memory and Settle are the modes (-settings, -memory,
	// -settle); SettingsLine says in a sentence what was set alike.
	Settings        string `json:"settings_mode"`
	Memory          string `json:"memory_mode"`
	Settle          string `json:"settle_mode"`
	ReadCompactions bool   `json:"read_compactions"`
	SettingsLine    string `json:"settings_line"`
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
	// Mins and Maxs[engine][workload]: each figure's smallest and largest
	// value over the runs, the spread the medians hide.
	Mins map[string]map[string]measurement `json:"mins"`
	Maxs map[string]map[string]measurement `json:"maxs"`
	// Ratios[workload][peer] = bloomkv's median ops/s / the peer's.
	Ratios map[string]map[string]float64 `json:"ratios"`
}

func newReport(cfg *config) *report {
	s := cfg.settings
	rep := &report{
		Date:      time.Now().UTC().Format(time.RFC3339),
		Note:      cfg.note,
		Command:   commandLine(cfg.args),
		LoadStart: loadAverage(),
		Params: params{
			Num: cfg.num, KeySize: cfg.keySize, ValueSize: cfg.valueSize, CompressionRatio: cfg.compressionRatio,
			Reads: cfg.reads, ScanLength: cfg.scanLength, Threads: cfg.threads, Runs: cfg.runs,
			Workloads: cfg.workloads, Settings: map[bool]string{false: "defaults", true: "matched"}[s.matched],
			Memory:          map[bool]string{false: "as-set", true: "equal"}[s.equalMemory],
			Settle:          map[bool]string{false: "quiet", true: "compact"}[s.settleCompact],
			ReadCompactions: s.readCompactions, SettingsLine: settingsLine(s),
		},
		Machine: machine{
			GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(),
			GOMAXPROCS: runtime.GOMAXPROCS(0), CPU: cpuModel(), Go: runtime.Version(),
		},
		Flags: cfg.flags,
		Settings: map[string]any{
			"block_size":                s.blockSize,
			"bloom_bits_per_key":        s.bloomBits,
			"filters_on_levels":         "all",
			"block_cache_bytes":         s.cacheSize,
			"memtable_bytes":            s.memtableSize,
			"read_triggered_compaction": readCompactionSetting(s),
		},
	}
	if s.matched {
		for k, v := range map[string]any{
			"compression":           "snappy",
			"immutable_memtables":   s.immutableMems,
			"l0_compaction_trigger": s.l0Compaction,
			"l0_slowdown_writes":    s.l0Slowdown,
			"l0_stop_writes":        s.l0Stop,
			"lbase_max_bytes":       s.lBaseBytes,
			"level_multiplier":      s.multiplier,
			"target_file_size":      s.tableSize,
			"max_open_files":        s.maxOpenFiles,
		} {
			rep.Settings[k] = v
		}
	}
	for _, e := range cfg.engines {
		rep.Params.Engines = append(rep.Params.Engines, e.name)
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

// settingsLine says in one sentence what every engine was given alike.
func settingsLine(s settings) string {
	line := fmt.Sprintf("Set alike: %s blocks, %d bloom bits/key on every level, %s block cache, %s memtable",
		kib(int64(s.blockSize)), s.bloomBits, mib(s.cacheSize), mib(int64(s.memtableSize)))
	if s.matched {
		return line + fmt.Sprintf("; shape matched (-settings matched): snappy, L0 compaction at %d tables (stop at %d), level 1 target %s (x%d per level), %s tables on every level, %d open files.",
			s.l0Compaction, s.l0Stop, mib(s.lBaseBytes), s.multiplier, mib(s.tableSize), s.maxOpenFiles)
	}
	return line + "; everything else each engine's own default (-settings defaults)."
}

// commandLine is the command that runs with args, as a reader types it in
// bench/compare.
func commandLine(flags []string) string {
	args := []string{"go run ."}
	for _, a := range flags {
		if strings.ContainsAny(a, " \t'\"$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}

// finish computes the medians and ratios.
func (rep *report) finish() {
	for i := range rep.Pairings {
		p := &rep.Pairings[i]
		p.Medians = map[string]map[string]measurement{}
		p.Mins = map[string]map[string]measurement{}
		p.Maxs = map[string]map[string]measurement{}
		for _, name := range p.Engines {
			p.Medians[name] = map[string]measurement{}
			p.Mins[name] = map[string]measurement{}
			p.Maxs[name] = map[string]measurement{}
			for _, w := range rep.Params.Workloads {
				var ms []measurement
				for _, r := range p.Runs {
					if m, ok := r.Results[w]; ok && r.Engine == name {
						ms = append(ms, m)
					}
				}
				if len(ms) > 0 {
					p.Medians[name][w] = medianOf(ms)
					p.Mins[name][w] = quantileOf(ms, 0)
					p.Maxs[name][w] = quantileOf(ms, 1)
				}
			}
		}
		p.Ratios = map[string]map[string]float64{}
		base, ok := p.Medians[bloomkvEngine.name]
		if !ok {
			continue
		}
		for _, w := range rep.Params.Workloads {
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
func medianOf(ms []measurement) measurement { return quantileOf(ms, 0.5) }

// quantileOf takes, for each figure separately, the value at quantile q of
// the runs: 0 the smallest, 1 the largest, 0.5 the median (the mean of the
// middle two for an even count).
func quantileOf(ms []measurement, q float64) measurement {
	pick := func(f func(measurement) float64) float64 {
		xs := make([]float64, len(ms))
		for i, m := range ms {
			xs[i] = f(m)
		}
		return quantile(xs, q)
	}
	return measurement{
		Ops:       ms[0].Ops,
		Found:     int64(pick(func(m measurement) float64 { return float64(m.Found) })),
		Elapsed:   time.Duration(pick(func(m measurement) float64 { return float64(m.Elapsed) })),
		OpsPerSec: pick(func(m measurement) float64 { return m.OpsPerSec }),
		P50us:     pick(func(m measurement) float64 { return m.P50us }),
		P95us:     pick(func(m measurement) float64 { return m.P95us }),
		P99us:     pick(func(m measurement) float64 { return m.P99us }),
		P999us:    pick(func(m measurement) float64 { return m.P999us }),
		MaxUs:     pick(func(m measurement) float64 { return m.MaxUs }),
		// Zero in reports made before the CPU figures: omitted again.
		CPUSeconds: pick(func(m measurement) float64 { return m.CPUSeconds }),
		CPUUsPerOp: pick(func(m measurement) float64 { return m.CPUUsPerOp }),
	}
}

// quantile returns the smallest (q 0), largest (q 1) or median (else) of
// xs, which it sorts.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	switch {
	case q <= 0:
		return xs[0]
	case q >= 1:
		return xs[n-1]
	case n%2 == 1:
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func (t *treeShape) String() string {
	var parts []string
	for l, n := range t.TablesPerLevel {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("L%d %d", l, n))
		}
	}
	return fmt.Sprintf("%s tables, %.1f MiB", strings.Join(parts, ", "), float64(t.TableBytes)/(1<<20))
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
	if !s.readCompactions {
		return "off where the engine allows: bloomkv and Pebble read the tree the settle left; goleveldb v1.0.0 cannot turn its off"
	}
	return "on in every engine (each one's default, -read_compactions); reads may reshape a tree while they are timed, so the report prints each tree before and after the reads and the compactions that ran"
}

// readReport loads a report written by -json.
func readReport(path string) (*report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rep.Params.Workloads) == 0 {
		return nil, fmt.Errorf("%s: no params.workloads: written before -report existed (2026-12-04), or not by bench/compare", path)
	}
	return &rep, nil
}

// loadAverage is the 1-minute load average, the first figure of
// /proc/loadavg; nil where there is none.
func loadAverage() *float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	var load float64
	if _, err := fmt.Sscan(string(data), &load); err != nil {
		return nil
	}
	return &load
}
