package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"
)

// -report FILE prints the text report of a JSON report (-json) without
// running anything: the JSON has every figure, and its "config" object
// every flag's value, from which the report's settings are parsed again.
// The samples in docs/studying-filters.md and the README are this output
// (docs_test.go checks that they still are).

// readReport reads a JSON report and rebuilds the configuration its text
// report needs.
func readReport(path string) (*report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rep := &report{}
	if err := json.Unmarshal(data, rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rep.cfg, err = configFromReport(rep.Config); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

// configFromReport parses a report's "config" object as flags. The values
// there are the resolved ones (0 and negatives replaced by what they
// meant), so they are set back as such: the alias -bloom_bits is left out
// (-filter_bits has the same value, fractions kept), a resolved
// -baseline_reads of 0 (none) is -1, and durations (JSON numbers of
// nanoseconds) get their unit.
func configFromReport(values map[string]any) (*config, error) {
	return parseConfigPreset(nil, io.Discard, func(fs *flag.FlagSet) error {
		names := make([]string, 0, len(values))
		for name := range values {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			v := values[name]
			switch name {
			case "bloom_bits", "report", "json", "csv", "plot", "cpuprofile", "memprofile":
				continue // an alias, or files the run wrote
			case "baseline_reads":
				if n, ok := v.(float64); ok && n == 0 {
					v = -1.0
				}
			}
			f := fs.Lookup(name)
			if f == nil {
				return fmt.Errorf("config: flag -%s is no longer known to kvbench", name)
			}
			var s string
			switch x := v.(type) {
			case string:
				s = x
			case bool:
				s = strconv.FormatBool(x)
			case float64:
				s = strconv.FormatFloat(x, 'f', -1, 64)
				if _, ok := f.Value.(flag.Getter).Get().(time.Duration); ok {
					s = time.Duration(x).String()
				}
			default:
				return fmt.Errorf("config: -%s has the value %v of type %T", name, v, v)
			}
			if err := fs.Set(name, s); err != nil {
				return fmt.Errorf("config: -%s %s: %w", name, s, err)
			}
		}
		if _, ok := values["dynamic_level_bytes"]; !ok {
			// Written before the flag existed, when every tree had
			// static level targets (the default changed later).
			if err := fs.Set("dynamic_level_bytes", "false"); err != nil {
				return err
			}
		}
		return nil
	})
}
