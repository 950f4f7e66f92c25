package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// run is the whole command: it parses args, runs the study, prints the
// report to stdout and writes the -json, -csv and -plot files. It returns
// the process exit code: 0 success, 1 a failed run, 2 bad flags.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, stderr)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "kvbench: %v\n", err)
		return 2
	}
	rep, err := execute(cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kvbench: %v\n", err)
		return 1
	}
	if err := writeOutputs(cfg, rep, stdout); err != nil {
		fmt.Fprintf(stderr, "kvbench: %v\n", err)
		return 1
	}
	return 0
}

// writeOutputs prints the text report and writes the requested files.
func writeOutputs(cfg *config, rep *report, stdout io.Writer) error {
	if err := printReport(stdout, rep); err != nil {
		return err
	}
	if cfg.jsonPath != "" {
		if err := writeFile(cfg.jsonPath, func(w io.Writer) error { return writeJSON(w, rep) }); err != nil {
			return fmt.Errorf("-json: %w", err)
		}
	}
	if cfg.csvPath != "" {
		if err := writeFile(cfg.csvPath, func(w io.Writer) error { return writeCSV(w, rep.Results) }); err != nil {
			return fmt.Errorf("-csv: %w", err)
		}
	}
	if cfg.plotPath != "" {
		if err := writePlot(cfg.plotPath, rep); err != nil {
			return fmt.Errorf("-plot: %w", err)
		}
	}
	return nil
}

// writeFile creates path and fills it with write, reporting the first
// error of writing or closing.
func writeFile(path string, write func(io.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return write(f)
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
}

func newRunInfo(start time.Time) runInfo {
	return runInfo{
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		CPUs:      runtime.NumCPU(),
		Started:   start.UTC().Format(time.RFC3339),
	}
}
