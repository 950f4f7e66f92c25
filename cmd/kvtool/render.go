package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/dustin/go-humanize"
)

// alignedTable aligns tab-separated columns two spaces apart. Write rows
// with row, then Flush.
type alignedTable struct {
	buf bytes.Buffer
	tw  *tabwriter.Writer
	out io.Writer
}

func newTable(w io.Writer) *alignedTable {
	t := &alignedTable{out: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

func (t *alignedTable) Write(p []byte) (int, error) { return t.tw.Write(p) }

// Flush writes the aligned rows, without the padding an empty last cell
// leaves at the end of a line.
func (t *alignedTable) Flush() {
	t.tw.Flush()
	for _, line := range strings.SplitAfter(t.buf.String(), "\n") {
		if line == "" {
			continue
		}
		fmt.Fprintln(t.out, strings.TrimRight(line, " \n"))
	}
	t.buf.Reset()
}

// row writes one tab-separated line.
func row(w io.Writer, cols ...any) {
	for i, c := range cols {
		if i > 0 {
			fmt.Fprint(w, "\t")
		}
		fmt.Fprint(w, c)
	}
	fmt.Fprintln(w)
}

// fmtKey renders an internal key; nil prints as "(none)".
func fmtKey(ikey []byte) string {
	if ikey == nil {
		return "(none)"
	}
	return base.FormatInternalKey(ikey)
}

// maxKeyWidth keeps aligned tables readable when keys are long; JSON and
// findings carry keys whole.
const maxKeyWidth = 40

func shorten(s string) string {
	if r := []rune(s); len(r) > maxKeyWidth {
		return string(r[:maxKeyWidth-1]) + "…"
	}
	return s
}

func levelName(level *int) string {
	if level == nil {
		return "-"
	}
	return fmt.Sprintf("L%d", *level)
}

// renderCheck prints a check report for a person.
func renderCheck(w io.Writer, rep *checkReport, quiet bool) {
	fmt.Fprintf(w, "kvtool check %s\n", rep.Dir)
	if !quiet {
		renderCheckDetails(w, rep)
	}
	fmt.Fprintln(w)
	if len(rep.Findings) == 0 {
		fmt.Fprintln(w, "findings: none")
	} else {
		fmt.Fprintln(w, "findings:")
		t := newTable(w)
		for _, f := range rep.Findings {
			file := f.File
			if file == "" {
				file = "-"
			}
			row(t, "  "+f.Severity.String(), file, f.Message)
		}
		t.Flush()
	}
	verdict := "OK"
	if !rep.OK {
		verdict = "PROBLEMS FOUND"
	}
	fmt.Fprintf(w, "\n%s, %s checked: %s, %s, %s: %s\n",
		plural(len(rep.Tables), "table"), plural(len(rep.Logs), "log"), plural(rep.Errors, "error"), plural(rep.Warnings, "warning"),
		plural(rep.Notes, "note"), verdict)
}

func renderCheckDetails(w io.Writer, rep *checkReport) {
	if m := rep.Manifest; m != nil {
		flushed := "unrecorded"
		if m.HasFlushedSeq {
			flushed = fmt.Sprint(m.FlushedSeq)
		}
		fmt.Fprintf(w, "\nmanifest  %s: %s, %s; log number %d, next file number %d, last sequence %d, flushed %s, synced %d\n",
			m.Name, plural(m.Edits, "edit"), humanize.IBytes(uint64(m.Bytes)), m.LogNum, m.NextFileNum, m.LastSeq, flushed, m.SyncedSeq)
	} else if rep.noManifest != "" {
		fmt.Fprintf(w, "\nmanifest  %s\n", rep.noManifest)
	}
	if len(rep.Levels) > 0 {
		fmt.Fprintln(w)
		t := newTable(w)
		row(t, "LEVEL", "TABLES", "SIZE", "ENTRIES", "SMALLEST", "LARGEST")
		for _, l := range rep.Levels {
			row(t, fmt.Sprintf("L%d", l.Level), l.Tables, humanize.IBytes(uint64(l.Bytes)), l.Entries, shorten(l.Smallest), shorten(l.Largest))
		}
		t.Flush()
	}
	if len(rep.Tables) > 0 {
		fmt.Fprintln(w)
		t := newTable(w)
		row(t, "TABLE", "LEVEL", "SIZE", "ENTRIES", "DELETIONS", "DATA BLOCKS", "FILTER", "STATUS")
		for _, tr := range rep.Tables {
			entries, dels, blocks, filter := "-", "-", "-", "-"
			if tr.Status != statusMissing && tr.Status != statusOrphan && tr.Status != statusForeign {
				entries, dels, blocks = fmt.Sprint(tr.Entries), fmt.Sprint(tr.Deletions), fmt.Sprint(tr.DataBlocks)
				filter = tr.Filter
				if tr.BitsPerKey > 0 {
					filter = fmt.Sprintf("%s, %.1f bits/key", filter, tr.BitsPerKey)
				}
			}
			row(t, tr.File, levelName(tr.Level), tr.Size, entries, dels, blocks, filter, tr.Status)
		}
		t.Flush()
	}
	if len(rep.Logs) > 0 {
		fmt.Fprintln(w)
		t := newTable(w)
		row(t, "LOG", "STATE", "SIZE", "RECORDS", "OPS", "SEQUENCES", "STATUS")
		for _, l := range rep.Logs {
			state := "live"
			switch {
			case rep.Manifest == nil:
				// Only the manifest's log number tells live from
				// obsolete; check treats every log as live then.
				state = "-"
			case l.Status == statusForeign:
				state = "foreign"
			case !l.Live:
				state = "obsolete"
			}
			seqs := "-"
			if l.Records > 0 {
				seqs = fmt.Sprintf("%d-%d", l.FirstSeq, l.LastSeq)
			}
			row(t, l.File, state, l.Bytes, l.Records, l.Ops, seqs, l.Status)
		}
		t.Flush()
	}
	if o := rep.Order; o != nil {
		fmt.Fprintf(w, "\nread order: scanned %d entries over %d user keys across all levels\n", o.Entries, o.UserKeys)
	}
}

// writesRange names the writes with sequences first to last: "write 7"
// or "writes 7-9".
func writesRange(first, last uint64) string {
	if first == last {
		return fmt.Sprintf("write %d", first)
	}
	return fmt.Sprintf("writes %d-%d", first, last)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix) + "\n"
}
