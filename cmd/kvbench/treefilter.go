package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv"
	"github.com/dustin/go-humanize"
)

// The tree-wide filter (-tree_filter, Options.TreeFilter, issue 28): the
// flag, the figures each result adds, and the report's section.

// registerTreeFilterFlags adds the issue 28 flags to fs.
func registerTreeFilterFlags(fs *flag.FlagSet, c *config) {
	fs.BoolVar(&c.rebuildFilters, "rebuild_filters", false, "with -db DIR -use_existing_db: rewrite the tables' filters in place under the filter flags given (DB.RebuildFilters: each level keeps its keys) before the reads, so settings are compared on the same tree; with -filter_sweep: load once, then rebuild per setting")
	fs.BoolVar(&c.treeFilter, "tree_filter", false, "keep one in-memory filter over the whole tree that names each key's level (Options.TreeFilter): an absent Get asks one filter, a present one reads the level it names; the tables keep their own filters")
}

// treeFilterResult is what the tree filter did in one workload and its
// shape at the end (the "tree_filter" object of a JSON result).
type treeFilterResult struct {
	// Lagging: at the workload's end the current version had no tree
	// filter yet (the engine's maintainer was catching up; Gets used the
	// tables' filters meanwhile).
	Lagging      bool    `json:"lagging"`
	Probes       uint64  `json:"probes"`
	Negatives    uint64  `json:"negatives"`
	Ambiguous    uint64  `json:"ambiguous"`
	Bytes        int64   `json:"bytes"`
	Entries      uint64  `json:"entries"`
	Capacity     uint64  `json:"capacity"`
	BitsPerEntry float64 `json:"bits_per_entry"`
	FPRTheory    float64 `json:"fp_rate_theory"`
	// Upkeep during the workload: whole builds, tables read back for
	// their keys, and the seconds builds and updates took.
	Rebuilds   uint64 `json:"rebuilds"`
	TablesRead uint64 `json:"tables_read"`
	// Tables and bytes updates read back (keys not handed over by the
	// flush or compaction that wrote or read them: 0 normally).
	UpdateTablesRead uint64 `json:"update_tables_read"`
	UpdateBytesRead  uint64 `json:"update_bytes_read"`
	// Moved tables read back to re-tag them once another table of the
	// level they left overlaps them.
	RetagTablesRead uint64  `json:"retag_tables_read"`
	RetagBytesRead  uint64  `json:"retag_bytes_read"`
	BuildSeconds    float64 `json:"build_seconds"`
	UpdateSeconds   float64 `json:"update_seconds"`
}

// setTreeFilter records the tree filter's work and shape, and the filter
// probes per Get: the tree filter's plus one per table probed when the
// tables' filters were consulted (each such table asks its own).
func (r *result) setTreeFilter(d bloomkv.Metrics) {
	tables := uint64(0)
	if r.FiltersConsulted {
		tables = d.TablesProbed
	}
	r.FilterProbesPerGet = ratio(d.TreeFilter.Probes+tables, d.Gets)
	tf := d.TreeFilter
	if !tf.Enabled {
		return
	}
	r.TreeFilter = &treeFilterResult{
		Lagging: tf.Lagging, Probes: tf.Probes, Negatives: tf.Negatives, Ambiguous: tf.Ambiguous,
		Bytes: tf.Bytes, Entries: tf.Entries, Capacity: tf.Capacity, FPRTheory: tf.FPRTheory,
		Rebuilds: tf.Rebuilds, TablesRead: tf.TablesRead,
		UpdateTablesRead: tf.UpdateTablesRead, UpdateBytesRead: tf.UpdateBytesRead,
		RetagTablesRead: tf.RetagTablesRead, RetagBytesRead: tf.RetagBytesRead,
		BuildSeconds: tf.BuildTime.Seconds(), UpdateSeconds: tf.UpdateTime.Seconds(),
	}
	if tf.Entries > 0 {
		r.TreeFilter.BitsPerEntry = float64(tf.Bytes*8) / float64(tf.Entries)
	}
}

// writeTreeFilter prints, for runs with a tree filter, what it did per Get
// and what it holds.
func writeTreeFilter(sb *strings.Builder, results []*result) {
	t := &table{}
	t.add("tree filter", "filter probes/Get", "tree probes/Get", "negatives/Get", "ambiguous/Get", "tables/Get", "memory", "entries", "bits/entry", "passed", "FP theory")
	n := 0
	for _, r := range results {
		tf := r.TreeFilter
		if tf == nil || r.Gets == 0 {
			continue
		}
		n++
		g := float64(r.Gets)
		t.add(label(r), fmtFloat(r.FilterProbesPerGet, 3), fmt.Sprintf("%.3f", float64(tf.Probes)/g),
			fmt.Sprintf("%.3f", float64(tf.Negatives)/g), fmt.Sprintf("%.4f", float64(tf.Ambiguous)/g),
			fmtFloat(r.TablesProbedPerGet, 3), humanize.IBytes(uint64(tf.Bytes)), fmt.Sprint(tf.Entries),
			fmt.Sprintf("%.2f", tf.BitsPerEntry), passed(tf), fmt.Sprintf("%.4f%%", 100*tf.FPRTheory))
	}
	if n > 0 {
		_ = t.write(sb)
		sb.WriteString("\n")
	}
	writeTreeFilterUpkeep(sb, results)
}

// passed is the share of the tree filter's lookups that named a level
// ("-" without lookups): for absent keys (readmissing) its measured
// false-positive rate, to set beside the theory.
func passed(tf *treeFilterResult) string {
	if tf.Probes == 0 {
		return "-"
	}
	return fmt.Sprintf("%.4f%%", 100*float64(tf.Probes-tf.Negatives)/float64(tf.Probes))
}

// writeTreeFilterUpkeep prints, for the workloads in which the tree filter
// was built or kept up (fills, mostly), what that cost: whole builds and
// the tables they read, tables read back by updates and re-tags, and the
// seconds builds and updates took.
func writeTreeFilterUpkeep(sb *strings.Builder, results []*result) {
	t := &table{}
	t.add("tree filter upkeep", "builds", "tables read", "build s", "update s", "tables read back", "bytes read back", "tables retagged", "bytes retagged")
	n := 0
	for _, r := range results {
		tf := r.TreeFilter
		if tf == nil || tf.Rebuilds+tf.TablesRead+tf.UpdateTablesRead+tf.RetagTablesRead == 0 && tf.UpdateSeconds == 0 {
			continue
		}
		n++
		t.add(label(r), fmt.Sprint(tf.Rebuilds), fmt.Sprint(tf.TablesRead),
			fmt.Sprintf("%.2f", tf.BuildSeconds), fmt.Sprintf("%.2f", tf.UpdateSeconds),
			fmt.Sprint(tf.UpdateTablesRead), humanize.IBytes(tf.UpdateBytesRead),
			fmt.Sprint(tf.RetagTablesRead), humanize.IBytes(tf.RetagBytesRead))
	}
	if n == 0 {
		return
	}
	_ = t.write(sb)
	sb.WriteString("\n")
}

// waitTreeFilter waits (up to a minute) until the tree filter describes the
// current version, so that timed reads do not run while the engine's
// maintainer catches up with the last compactions.
func waitTreeFilter(db *bloomkv.DB) {
	deadline := time.Now().Add(time.Minute)
	for db.Metrics().TreeFilter.Lagging && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}
