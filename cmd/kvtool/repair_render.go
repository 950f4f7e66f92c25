package main

import (
	"fmt"
	"io"

	"github.com/bloomkv/bloomkv/internal/manifest"
)

// renderRepair prints a repair report for a person.
func renderRepair(w io.Writer, rep *repairReport) {
	fmt.Fprintf(w, "kvtool repair %s\n", rep.Dir)
	if rep.DBID != "" {
		fmt.Fprintf(w, "\nidentity  %q, from %s\n", rep.DBID, rep.DBIDFrom)
	}
	if rep.Manifest != "" {
		trust := "not trusted (see findings): every intact table and log record is merged"
		if rep.Trusted {
			trust = fmt.Sprintf("trusted: every write up to sequence %d is in the tables it lists", rep.FlushedSeq)
		}
		fmt.Fprintf(w, "manifest  %s, %s\n", rep.Manifest, trust)
	}
	if len(rep.Tables) > 0 {
		fmt.Fprintln(w)
		t := newTable(w)
		row(t, "TABLE", "STATUS", "ENTRIES", "DELETIONS", "SEQUENCES")
		for _, tr := range rep.Tables {
			entries, dels, seqs := "-", "-", "-"
			if tr.Status == repairMerged || tr.Status == repairSuperseded {
				entries, dels = fmt.Sprint(tr.Entries), fmt.Sprint(tr.Deletions)
				if tr.Entries > 0 {
					seqs = fmt.Sprintf("%d-%d", tr.SmallestSeq, tr.LargestSeq)
				}
			}
			row(t, tr.File, tr.Status, entries, dels, seqs)
		}
		t.Flush()
	}
	if len(rep.Logs) > 0 {
		fmt.Fprintln(w)
		t := newTable(w)
		row(t, "LOG", "STATUS", "SIZE", "RECORDS", "OPS", "SEQUENCES", "SUPERSEDED", "DROPPED")
		for _, l := range rep.Logs {
			seqs, dropped := "-", "-"
			if l.Records > 0 {
				seqs = fmt.Sprintf("%d-%d", l.FirstSeq, l.LastSeq)
			}
			if l.DroppedAt != nil {
				dropped = fmt.Sprintf("%d bytes at offset %d", l.DroppedBytes, *l.DroppedAt)
			}
			row(t, l.File, l.Status, l.Bytes, l.Records, l.Ops, seqs, l.Superseded, dropped)
		}
		t.Flush()
	}
	if rep.Committed {
		renderRepairOutput(w, rep)
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
	fmt.Fprintf(w, "\n%s\n", repairVerdict(rep))
}

// renderRepairOutput prints what a committed repair wrote and moved.
func renderRepairOutput(w io.Writer, rep *repairReport) {
	s := rep.Settings
	filters := "no filters"
	if s.FilterBitsPerKey > 0 {
		filters = fmt.Sprintf("%g bits/key %s filters over whole keys", s.FilterBitsPerKey, s.FilterVariant)
	} else if s.BloomBitsPerKey > 0 {
		filters = fmt.Sprintf("%d bits/key %s filters over whole keys", s.BloomBitsPerKey, s.FilterVariant)
	}
	fmt.Fprintf(w, "\nnew tables at level %d (one sorted run), %s compression, %d-byte blocks, %s (settings of %s):\n",
		manifest.NumLevels-1, s.Compression, s.BlockSize, filters, s.From)
	if len(rep.NewTables) == 0 {
		fmt.Fprintln(w, "  none: no live key remains")
	} else {
		t := newTable(w)
		row(t, "TABLE", "SIZE", "ENTRIES", "SEQUENCES", "SMALLEST", "LARGEST")
		for _, nt := range rep.NewTables {
			row(t, nt.File, nt.Size, nt.Entries, fmt.Sprintf("%d-%d", nt.SmallestSeq, nt.LargestSeq), shorten(nt.Smallest), shorten(nt.Largest))
		}
		t.Flush()
	}
	fmt.Fprintf(w, "\nnew manifest  %s: log %s (empty), last sequence %d (all flushed)\n", rep.NewManifest, rep.NewLog, rep.LastSeq)
	for _, name := range rep.ForeignFiles {
		fmt.Fprintf(w, "foreign       %s: left in place, recorded as foreign\n", name)
	}
	if len(rep.Moved) > 0 {
		fmt.Fprintf(w, "\nmoved to %s/:\n", lostDirName)
		t := newTable(w)
		for _, m := range rep.Moved {
			how := "moved"
			if m.Copied {
				how = "copied"
			}
			row(t, "  "+m.From, how, m.To)
		}
		t.Flush()
	}
}

// repairVerdict is the report's last line.
func repairVerdict(rep *repairReport) string {
	if !rep.Committed {
		return "NOT REPAIRED: " + rep.Error
	}
	damagedTables, droppedBytes, droppedLogs, foreign := 0, int64(0), 0, len(rep.ForeignFiles)
	for _, t := range rep.Tables {
		if t.Status == repairDamaged {
			damagedTables++
		}
	}
	for _, l := range rep.Logs {
		if l.DroppedBytes > 0 {
			droppedLogs++
			droppedBytes += l.DroppedBytes
		}
	}
	seqs := "no data"
	if rep.LargestSeq > 0 {
		seqs = fmt.Sprintf("sequences %d-%d", rep.SmallestSeq, rep.LargestSeq)
	}
	msg := fmt.Sprintf("repaired: %s (%s) from %d entries in %s; %s and %d log bytes (%s) moved to %s/; %s left in place",
		plural(int(rep.KeysOut), "live key"), seqs, rep.EntriesIn, plural(len(rep.NewTables), "new table"),
		plural(damagedTables, "damaged table"), droppedBytes, plural(droppedLogs, "log"), lostDirName, plural(foreign, "foreign file"))
	if !rep.OK {
		msg += "\nREPAIRED, BUT: " + rep.Error
	}
	return msg
}
