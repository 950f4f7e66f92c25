package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart geometry: two panels stacked, FP rate on top, data blocks per Get
// below, sharing the bits-per-key axis.
const (
	chartWidth  = 7 * vg.Inch
	chartHeight = 8 * vg.Inch
	chartDPI    = 144
)

var (
	colorTheory   = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	colorMeasured = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colorHits     = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorMixed    = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// writePlot draws the sweep chart (or the -filter_sweep chart) to w, in the format path's extension
// names (.png or .svg).
func writePlot(w io.Writer, path string, rep *report) error {
	var fp, blocks *plot.Plot
	var err error
	if len(rep.cfg.rangeSweep) > 0 { // rangesweep.go
		fp, blocks, err = rangeSweepPanels(rep)
	} else if len(rep.cfg.sweep) == 0 { // -filter_sweep
		fp, blocks, err = filterSweepPanels(rep)
	} else if fp, err = fpPanel(rep); err == nil {
		blocks, err = blocksPanel(rep)
	}
	if err != nil {
		return err
	}
	var canvas vg.CanvasWriterTo
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(chartWidth, chartHeight), vgimg.UseDPI(chartDPI))}
	case ".svg":
		canvas = vgsvg.New(chartWidth, chartHeight)
	default:
		return fmt.Errorf("%s: want .png or .svg", path)
	}
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6),
		PadLeft: vg.Points(6), PadRight: vg.Points(12), PadY: vg.Points(18)}
	panels := [][]*plot.Plot{{fp}, {blocks}}
	for i, row := range plot.Align(panels, tiles, dc) {
		panels[i][0].Draw(row[0])
	}
	_, err = canvas.WriteTo(w)
	return err
}

// sweepResults returns the sweep results of one workload, in setting order.
func sweepResults(rep *report, name string) []*result {
	var out []*result
	for _, r := range rep.Results {
		if r.Pass == "sweep" && r.Benchmark == name {
			out = append(out, r)
		}
	}
	return out
}

// bitsX is a result's x: bits per key, 0 for no filter.
func bitsX(r *result) float64 { return float64(max(0, r.BloomBits)) }

// fpWorkload is the workload whose FP rates the chart shows: readmissing
// (every probe is of an absent key: the largest sample), else the first
// read workload that did Gets.
func fpWorkload(rep *report) string {
	names := rep.cfg.readWorkloads()
	for _, n := range names {
		if n == readMissing {
			return n
		}
	}
	for _, n := range names {
		if n != scanBench {
			return n
		}
	}
	return ""
}

func fpPanel(rep *report) (*plot.Plot, error) {
	name := fpWorkload(rep)
	if name == "" {
		return nil, fmt.Errorf("no read workload with Gets in the sweep to chart")
	}
	var theory, measured plotter.XYs
	for _, r := range sweepResults(rep, name) {
		// A log axis cannot show 0; a setting whose sample had no false
		// positive is left out rather than drawn at a made-up floor.
		if r.FPRateTheory != nil && *r.FPRateTheory > 0 {
			theory = append(theory, plotter.XY{X: bitsX(r), Y: *r.FPRateTheory})
		}
		if r.FPRateMeasured != nil && *r.FPRateMeasured > 0 {
			measured = append(measured, plotter.XY{X: bitsX(r), Y: *r.FPRateMeasured})
		}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Filter false-positive rate (%s, %d keys)", name, rep.cfg.num)
	p.X.Label.Text = "bits per key"
	p.Y.Label.Text = "false-positive rate (log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	p.Legend.Left = true // the curves fall to the right: bottom-left is free
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(12), vg.Points(8)
	if err := addLine(p, "theory (1 - e^(-kn/m))^k, n and m of the tables", theory, colorTheory, true); err != nil {
		return nil, err
	}
	if err := addLine(p, "measured: false positives / absent-key probes", measured, colorMeasured, false); err != nil {
		return nil, err
	}
	lo, hi := 1e-4, 1.0
	if l, h, ok := yRange(append(append(plotter.XYs{}, theory...), measured...)); ok {
		lo, hi = l, h
	}
	// Whole decades, the bottom nudged down so that LogTicks (which
	// truncates log10 of the minimum) labels it.
	p.Y.Min = math.Pow10(int(math.Floor(math.Log10(lo)))) * 0.999
	p.Y.Max = math.Pow10(int(math.Ceil(math.Log10(hi))))
	setBitsAxis(p, rep)
	return p, nil
}

func blocksPanel(rep *report) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Data blocks read per Get"
	if rs := sweepResults(rep, readMissing); len(rs) > 0 && rs[0].TablesProbedPerGet != nil {
		p.Title.Text += fmt.Sprintf(" (an absent Get probes %.2f tables)", *rs[0].TablesProbedPerGet)
	}
	p.X.Label.Text = "bits per key"
	p.Y.Label.Text = "data blocks per Get"
	p.Add(plotter.NewGrid())
	// Right, halfway down: clear of the hits' line at the top and the
	// misses' line near zero.
	p.Legend.Top = true
	p.Legend.YOffs = -chartHeight / 8
	series := []struct {
		name, label string
		color       color.Color
	}{
		{readMissing, "absent keys (readmissing)", colorMeasured},
		{readRandom, "present keys (readrandom)", colorHits},
		{readMixed, fmt.Sprintf("mixed (readmixed, %.0f%% hits)", rep.cfg.hitRatio*100), colorMixed},
	}
	for _, s := range series {
		var xys plotter.XYs
		for _, r := range sweepResults(rep, s.name) {
			if r.DataBlocksPerGet != nil {
				xys = append(xys, plotter.XY{X: bitsX(r), Y: *r.DataBlocksPerGet})
			}
		}
		if err := addLine(p, s.label, xys, s.color, false); err != nil {
			return nil, err
		}
	}
	p.Y.Min = 0
	setBitsAxis(p, rep)
	return p, nil
}

// setBitsAxis puts a tick at every swept setting.
func setBitsAxis(p *plot.Plot, rep *report) {
	var ticks []plot.Tick
	for _, b := range rep.cfg.sweep {
		ticks = append(ticks, plot.Tick{Value: float64(b), Label: fmt.Sprint(b)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min = 0
}

// addLine adds a line with point markers; nothing when xys is empty.
func addLine(p *plot.Plot, label string, xys plotter.XYs, c color.Color, dashed bool) error {
	if len(xys) == 0 {
		return nil
	}
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	line.Color = c
	line.Width = vg.Points(1.5)
	points.Color = c
	points.Shape = draw.CircleGlyph{}
	points.Radius = vg.Points(2.5)
	if dashed {
		// The reference curve: dashed with open rings, so a measured
		// curve drawn on top of it leaves it visible.
		line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		points.Shape = draw.RingGlyph{}
		points.Radius = vg.Points(5)
	}
	p.Add(line, points)
	p.Legend.Add(label, line, points)
	return nil
}

func yRange(xys plotter.XYs) (lo, hi float64, ok bool) {
	if len(xys) == 0 {
		return 0, 0, false
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, xy := range xys {
		lo, hi = min(lo, xy.Y), max(hi, xy.Y)
	}
	return lo, hi, true
}
