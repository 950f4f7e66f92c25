package main

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/filter"
)

// The range-filter sweep (issue 27): -range_sweep lists range-filter bits
// per key, -range_widths the widths of the empty ranges. The data is
// loaded once; per bits setting every table is rewritten in its own level
// with range filters of that budget (DB.RebuildFilters: the tree keeps its
// shape and its tables their bounds, so every setting is measured on the
// same tree), and then, per width, the empty-range
// workloads (scanempty, scanemptynear) run on a reopened database. The
// other read workloads run once per setting, at the first width. -plot
// draws the measured false-positive rate of each width against the
// design's bound, per bits per key.

// rangeSweepPass names the results of the range sweep.
const rangeSweepPass = "range_sweep"

// rangeSweepSetting is one -range_sweep setting: how long rebuilding the
// range filters took and the tree it left.
type rangeSweepSetting struct {
	RangeFilterBits  float64 `json:"range_filter_bits"`
	RecompactSeconds float64 `json:"recompact_seconds"`
	Shape            shape   `json:"shape"`
}

// parseRangeSweep parses -range_sweep and -range_widths.
func (rc *rangeConfig) parseRangeSweep() error {
	for f := range strings.SplitSeq(rc.rangeSweepFlag, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		b, err := strconv.ParseFloat(f, 64)
		if err != nil || !(b >= filter.MinRangeBitsPerKey && b <= filter.MaxRangeBitsPerKey) {
			return fmt.Errorf("-range_sweep: %q is not a range-filter budget in [%d, %d] bits per key", f, filter.MinRangeBitsPerKey, filter.MaxRangeBitsPerKey)
		}
		rc.rangeSweep = append(rc.rangeSweep, b)
	}
	for f := range strings.SplitSeq(rc.rangeWidthsFlag, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		w, err := strconv.ParseUint(f, 10, 64)
		if err != nil || w < 1 || w > 1<<40 {
			return fmt.Errorf("-range_widths: %q is not a width in [1, 2^40]", f)
		}
		rc.rangeWidths = append(rc.rangeWidths, w)
	}
	if len(rc.rangeWidths) > 0 && len(rc.rangeSweep) == 0 {
		return errors.New("-range_widths goes with -range_sweep (a single run takes -range_width)")
	}
	if len(rc.rangeSweep) > 0 && len(rc.rangeWidths) == 0 {
		rc.rangeWidths = []uint64{rc.rangeWidth}
	}
	return nil
}

// validateRangeSweep checks -range_sweep against the rest of the flags.
func (c *config) validateRangeSweep() error {
	if len(c.rangeSweep) == 0 {
		return nil
	}
	switch {
	case len(c.sweep) > 0 || len(c.filterSweep) > 0 || c.compareFilters:
		return errors.New("-range_sweep, -sweep, -filter_sweep and -compare_filters are separate studies: pick one")
	case !slices.ContainsFunc(c.benchmarks, isEmptyRangeWorkload):
		return errors.New("-range_sweep measures empty ranges: add scanempty or scanemptynear to -benchmarks")
	case c.readCompactions:
		return errors.New("-range_sweep reads each setting's tables as recompacted: it cannot run with -read_compactions")
	}
	return nil
}

func isEmptyRangeWorkload(name string) bool { return name == scanEmpty || name == scanEmptyNear }

// rangeSweep: load once, then per setting rebuild every table's range
// filter with that budget and run the reads on a reopened database.
func (s *study) rangeSweep() error {
	if err := s.withDB(s.cfg.bloomBits, false, s.load); err != nil {
		return err
	}
	bits := s.cfg.bloomBits
	for _, rb := range s.cfg.rangeSweep {
		// options() and the workloads read the range settings from cfg:
		// the sweep sets them per setting (the JSON config keeps the
		// flags as given).
		s.cfg.rangeFilterBits = rb
		setting := rangeSweepSetting{RangeFilterBits: rb}
		if err := s.withDB(bits, false, func(db *bloomkv.DB) error {
			secs, err := s.rewriteTables(db, fmt.Sprintf("rebuild range filters %g bits/key", rb), db.RebuildFilters)
			setting.RecompactSeconds = secs
			setting.Shape = shapeOf(db.Metrics())
			return err
		}); err != nil {
			return err
		}
		s.rep.RangeSweep = append(s.rep.RangeSweep, setting)
		for i, w := range s.cfg.rangeWidths {
			s.cfg.rangeWidth = w
			names := slices.DeleteFunc(s.cfg.readWorkloads(), func(n string) bool { return i > 0 && !isEmptyRangeWorkload(n) })
			if err := s.withDB(bits, false, func(db *bloomkv.DB) error {
				return s.readPassNames(db, rangeSweepPass, bits, names, s.cfg.reads)
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeRangeSweep prints each setting's recompaction and tree, then one
// table per empty-range workload: bits per key and width against the
// measured and theoretical false-positive rates.
func writeRangeSweep(sb *strings.Builder, rep *report) {
	fmt.Fprintf(sb, "range sweep  each setting: RebuildFilters rewrites every table in its level with the setting's range filter, then each width's reads run on a reopened database\n")
	t := &table{}
	t.add("rebuild", "seconds", "tables", "range filters", "bits/key spent")
	for _, st := range rep.RangeSweep {
		// Per key written (the keys are distinct).
		spent := fmt.Sprintf("%.2f", float64(st.Shape.RangeFilterBytes)*8/float64(rep.cfg.num))
		t.add(fmt.Sprintf("%g bits/key", st.RangeFilterBits), fmt.Sprintf("%.1f", st.RecompactSeconds), fmt.Sprint(st.Shape.Files),
			humanize.IBytes(uint64(st.Shape.RangeFilterBytes)), spent)
	}
	_ = t.write(sb)
	sb.WriteString("\n")
	writeRangeCosts(sb, rep.Results)
}

// rangeSweepPanels returns the two panels of the -range_sweep chart:
// scanempty's and scanemptynear's measured false-positive rates against
// the bound, per bits per key, a line per width.
func rangeSweepPanels(rep *report) (top, bottom *plot.Plot, err error) {
	if top, err = rangeFPRPanel(rep, scanEmpty, "random empty ranges"); err != nil {
		return nil, nil, err
	}
	if bottom, err = rangeFPRPanel(rep, scanEmptyNear, "empty ranges right after a key"); err != nil {
		return nil, nil, err
	}
	return top, bottom, nil
}

var widthColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

func rangeFPRPanel(rep *report, name, what string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Range-filter false-positive rate: %s (%s, %d keys)", what, name, rep.cfg.num)
	p.X.Label.Text = "range-filter bits per key B   (dashed: the bound 1 - e^(-W n/r), about W / 2^(B-2))"
	p.Y.Label.Text = "false positives / empty tables probed"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	// The lines fall to the right: bottom-left is free.
	p.Legend.Left = true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(12), vg.Points(8)
	var all plotter.XYs
	for i, w := range rep.cfg.rangeWidths {
		var measured, theory plotter.XYs
		for _, r := range rep.Results {
			if r.Pass != rangeSweepPass || r.Benchmark != name || r.RangeWidth != w {
				continue
			}
			// A log axis cannot show 0: a setting whose sample had no
			// false positive is left out rather than drawn at a floor.
			if r.RangeFilterFPRMeasured != nil && *r.RangeFilterFPRMeasured > 0 {
				measured = append(measured, plotter.XY{X: r.RangeFilterBits, Y: *r.RangeFilterFPRMeasured})
			}
			if r.RangeFilterFPRTheory != nil && *r.RangeFilterFPRTheory > 0 {
				theory = append(theory, plotter.XY{X: r.RangeFilterBits, Y: *r.RangeFilterFPRTheory})
			}
		}
		c := widthColors[i%len(widthColors)]
		if err := addLine(p, fmt.Sprintf("W=%d measured", w), measured, c, false); err != nil {
			return nil, err
		}
		if err := addLine(p, fmt.Sprintf("W=%d bound", w), theory, c, true); err != nil {
			return nil, err
		}
		all = append(append(all, measured...), theory...)
	}
	lo, hi := 1e-4, 1.0
	if l, h, ok := yRange(all); ok {
		lo, hi = l, h
	}
	p.Y.Min = math.Pow10(int(math.Floor(math.Log10(lo)))) * 0.999
	p.Y.Max = math.Pow10(int(math.Ceil(math.Log10(hi))))
	var ticks []plot.Tick
	for _, b := range rep.cfg.rangeSweep {
		ticks = append(ticks, plot.Tick{Value: b, Label: fmt.Sprintf("%g", b)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	return p, nil
}
