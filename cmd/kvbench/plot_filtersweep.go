package main

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The -filter_sweep chart: one bar per setting (in the order given), filter
// memory on top and false positives per absent Get below, so that equal
// memory and what it buys are read off together.

// filterSweepPanels returns the two panels of the -filter_sweep chart.
func filterSweepPanels(rep *report) (memory, fps *plot.Plot, err error) {
	var names []string
	var mem plotter.Values
	for i, fr := range rep.FilterSweep {
		names = append(names, fmt.Sprintf("%d: %s", i+1, fr.Setting))
		mem = append(mem, float64(fr.Shape.FilterBytes)/1024)
	}
	var fp plotter.Values
	workload := fpWorkload(rep)
	for _, r := range rep.Results {
		if r.Pass == "filter_sweep" && r.Benchmark == workload {
			v := 0.0
			if r.FilterFalsePositivesPerGet != nil {
				v = *r.FilterFalsePositivesPerGet
			}
			fp = append(fp, v)
		}
	}
	if len(fp) != len(mem) {
		return nil, nil, fmt.Errorf("-plot: %d settings but %d %s results", len(mem), len(fp), workload)
	}
	if memory, err = barPanel(fmt.Sprintf("Filter memory at a budget of %s", budgetLabel(rep.cfg)), "KiB", names, mem); err != nil {
		return nil, nil, err
	}
	if fps, err = barPanel(fmt.Sprintf("False positives per Get (%s)", workload), "false positives per Get", names, fp); err != nil {
		return nil, nil, err
	}
	return memory, fps, nil
}

func barPanel(title, yLabel string, names []string, values plotter.Values) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	bars, err := plotter.NewBarChart(values, vg.Points(28))
	if err != nil {
		return nil, err
	}
	bars.Color = colorMeasured
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(names...)
	// Room around the outer bars and above the tallest.
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.Y.Min = 0
	top := 0.0
	for _, v := range values {
		top = max(top, v)
	}
	p.Y.Max = 1.1 * top
	return p, nil
}
