package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"time"
)

// run is the whole command: it parses args, opens the -json, -csv and
// -plot files, runs the study, prints the report to stdout and fills the
// files. It returns the process exit code: 0 success, 1 a failed run, 2 bad
// flags (an output file that cannot be opened for writing among them: that
// is found before the benchmark starts, not after it).
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, stderr)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "kvbench: %v\n", err)
		return 2
	}
	if cfg.reportPath != "" {
		rep, err := readReport(cfg.reportPath) // reportconfig.go
		if err == nil {
			err = printReport(stdout, rep)
		}
		if err != nil {
			fmt.Fprintf(stderr, "kvbench: -report: %v\n", err)
			return 1
		}
		return 0
	}
	outs, err := openOutFiles(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "kvbench: %v\n", err)
		return 2
	}
	defer outs.abandon()
	if o := outs.cpuProfile; o != nil {
		if err := pprof.StartCPUProfile(o.f); err != nil {
			fmt.Fprintf(stderr, "kvbench: -cpuprofile %s: %v\n", o.path, err)
			return 1
		}
	}
	if outs.memProfile != nil {
		runtime.MemProfileRate = 64 << 10 // every allocation site that matters, cheaply
	}
	rep, err := execute(cfg, stderr)
	if outs.cpuProfile != nil {
		pprof.StopCPUProfile()
		if cerr := outs.cpuProfile.close(); err == nil {
			err = cerr
		}
	}
	if o := outs.memProfile; o != nil && err == nil {
		err = o.write(func(w io.Writer) error { return pprof.Lookup("allocs").WriteTo(w, 0) })
	}
	if err != nil {
		fmt.Fprintf(stderr, "kvbench: %v\n", err)
		return 1
	}
	if err := writeOutputs(outs, rep, stdout); err != nil {
		fmt.Fprintf(stderr, "kvbench: %v\n", err)
		return 1
	}
	return 0
}

// writeOutputs prints the text report and fills the requested files.
func writeOutputs(outs *outFiles, rep *report, stdout io.Writer) error {
	if err := printReport(stdout, rep); err != nil {
		return err
	}
	if o := outs.json; o != nil {
		if err := o.write(func(w io.Writer) error { return writeJSON(w, rep) }); err != nil {
			return err
		}
	}
	if o := outs.csv; o != nil {
		if err := o.write(func(w io.Writer) error { return writeCSV(w, rep.Results) }); err != nil {
			return err
		}
	}
	if o := outs.plot; o != nil {
		if err := o.write(func(w io.Writer) error { return writePlot(w, o.path, rep) }); err != nil {
			return err
		}
	}
	return nil
}

// runInfo says where and when the figures were taken.
type runInfo struct {
	GoVersion   string  `json:"go_version"`
	OS          string  `json:"os"`
	Arch        string  `json:"arch"`
	CPUs        int     `json:"cpus"`
	Started     string  `json:"started"`
	WallSeconds float64 `json:"wall_seconds"`
	DBDir       string  `json:"db_dir"`
	DBTemporary bool    `json:"db_temporary"`
	// LoadStart and LoadEnd are the 1-minute load averages when the run
	// started and ended (null where the system does not say): how much
	// other work the timings shared the CPUs with.
	LoadStart *float64 `json:"load_average_start"`
	LoadEnd   *float64 `json:"load_average_end"`
	// Commit is the commit the binary was built from (commit.go; absent
	// in reports written before it was recorded, and where it cannot be
	// told); Modified: the working tree had uncommitted changes then.
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"commit_modified,omitempty"`
}

func newRunInfo(start time.Time) runInfo {
	commit, modified := buildCommit()
	return runInfo{
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		CPUs:      runtime.NumCPU(),
		Started:   start.UTC().Format(time.RFC3339),
		LoadStart: loadAverage(),
		Commit:    commit,
		Modified:  modified,
	}
}
