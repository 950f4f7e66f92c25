package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/sstable"
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

// hexKeys is -hex: every key in hex, for comparing keys byte by byte or
// feeding them to other tools. Each command sets it from its flags.
var hexKeys atomic.Bool

// fmtUserKey renders a user key one way, chosen per key: quoted text when
// every byte is printable ASCII, otherwise 0x and hex. Go's %q, used
// before, mixed the two within a key ("\xff\xff\xadޱ\xbc}": \x escapes
// beside whatever runes the bytes happened to decode to), so binary keys
// could be neither read nor compared.
func fmtUserKey(k []byte) string {
	if !hexKeys.Load() && isPrintableASCII(k) {
		return strconv.Quote(string(k))
	}
	return "0x" + hex.EncodeToString(k)
}

func isPrintableASCII(k []byte) bool {
	for _, c := range k {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// fmtKey renders an internal key as its user key (fmtUserKey), sequence
// number and kind: "user:1"#42,SET. nil prints as "(none)".
func fmtKey(ikey []byte) string {
	switch {
	case ikey == nil:
		return "(none)"
	case len(ikey) < base.TrailerLen:
		return "invalid internal key " + fmtUserKey(ikey)
	}
	t := base.Trailer(ikey)
	return fmt.Sprintf("%s#%d,%s", fmtUserKey(base.UserKey(ikey)), t>>8, base.Kind(t&0xFF))
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
		fmt.Fprintf(w, "          %s\n", nextFileNote(m.NextFileNum, len(rep.Tables), len(rep.Logs)))
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

// nextFileNote explains a next file number far above the files present,
// which looks like loss to a newcomer and is the normal state: every log,
// flush output, compaction output and manifest takes a number, numbers are
// never reused, and compaction deletes the inputs it merged.
func nextFileNote(next uint64, tables, logs int) string {
	if next <= uint64(tables+logs)+2 {
		return "(next file number: the number the next new file gets)"
	}
	return fmt.Sprintf("(next file number %d with %s and %s here is normal: every log, flush, compaction output and manifest takes a number, "+
		"numbers are never reused, and compactions delete the tables they merge)", next, plural(tables, "table"), plural(logs, "log"))
}

// variantWords names a filter variant for a person.
func variantWords(v filter.Variant) string {
	switch v {
	case filter.VariantStandard:
		return "standard bloom filter"
	case filter.VariantBlocked:
		return "blocked bloom filter (probes in one 64-byte line)"
	case filter.VariantFuse:
		return "binary fuse filter (8-bit fingerprints, 3 slots per key)"
	}
	return fmt.Sprintf("unknown filter variant %d", uint8(v))
}

// filterKeyWords says what a table's filter indexes.
func filterKeyWords(p *sstable.Properties) string {
	switch {
	case p.FilterKeyName == "":
		return "whole user keys"
	case p.FilterWholeKeys:
		return fmt.Sprintf("whole user keys and keys from the extractor %q", p.FilterKeyName)
	}
	return fmt.Sprintf("keys from the extractor %q (e.g. the row of a row+column key)", p.FilterKeyName)
}

// renderProperties prints a table's properties block in words, keys as
// fmtKey renders them (sstable.Properties.String is terser: "variant 1",
// key "").
func renderProperties(w io.Writer, p *sstable.Properties) {
	t := newTable(w)
	row(t, "  format version", p.FormatVersion)
	row(t, "  entries", fmt.Sprintf("%d (%d deletions)", p.NumEntries, p.NumDeletions))
	row(t, "  data blocks", p.NumDataBlocks)
	row(t, "  raw keys / values", fmt.Sprintf("%d / %d bytes", p.RawKeyBytes, p.RawValueBytes))
	row(t, "  data / index / filter", fmt.Sprintf("%d / %d / %d bytes", p.DataSize, p.IndexSize, p.FilterSize))
	row(t, "  smallest key", fmtKey(p.SmallestKey))
	row(t, "  largest key", fmtKey(p.LargestKey))
	row(t, "  sequences", fmt.Sprintf("%d-%d", p.SmallestSeq, p.LargestSeq))
	if p.FilterVariant == 0 {
		row(t, "  filter", "none")
	} else {
		row(t, "  filter", fmt.Sprintf("%s, %g bits/key configured, %d keys, over %s",
			variantWords(filter.Variant(p.FilterVariant)), p.BitsPerKey(), p.FilterKeyCount, filterKeyWords(p)))
	}
	row(t, "  compression", p.Compression)
	row(t, "  block size / restart", fmt.Sprintf("%d / %d", p.BlockSize, p.RestartInterval))
	if p.NumRangeDels > 0 {
		row(t, "  range deletions", fmt.Sprintf("%d (block at %d, %d bytes)", p.NumRangeDels, p.RangeDelOffset, p.RangeDelSize))
	}
	if p.FileNum != 0 || len(p.DBID) > 0 {
		row(t, "  identity", fmt.Sprintf("file %06d of database %q", p.FileNum, p.DBID))
	}
	t.Flush()
}
