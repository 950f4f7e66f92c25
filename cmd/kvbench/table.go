package main

import (
	"fmt"
	"io"
	"strings"
)

// table is a text table: the first column left-aligned, the others
// right-aligned, two spaces apart.
type table struct {
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) error {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var sb strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			switch {
			case i == 0:
				sb.WriteString(c + pad)
			default:
				sb.WriteString("  " + pad + c)
			}
		}
		sb.WriteString("\n")
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// Cell formatters. A nil figure prints as "-".

func fmtFloat(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, *v)
}

// fmtPercent prints a rate with three significant digits, so both 39.4%
// and 0.0463% stay readable.
func fmtPercent(v *float64) string {
	if v == nil {
		return "-"
	}
	if *v == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.3g%%", *v*100)
}

func fmtMicros(us float64) string {
	if us < 100 {
		return fmt.Sprintf("%.2f", us)
	}
	return fmt.Sprintf("%.0f", us)
}
