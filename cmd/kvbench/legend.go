package main

import (
	"fmt"
	"strings"
)

// usageIntro opens -help: what the default run measures and how to read
// its answer, so that neither the report nor the help needs
// docs/studying-filters.md to make sense.
const usageIntro = `Usage: kvbench [flags]

Measures bloomkv's point lookups and what its per-table bloom filters buy.

The default run fills a temporary database with 1M keys (fillrandom), lets
the tree settle, reads 1M present keys (readrandom) and 1M absent keys
inside the key range (readmissing), then reopens the same tables with
Options.IgnoreFilters and reads the first 20k of the same keys again
(-baseline_reads). The report shows latency, what each Get cost (tables
considered, tables the filters skipped, data blocks and bytes read), the
same level by level, and "what the filters bought": the two passes side by
side. A legend under each table says what its columns mean (-legend=false
drops them). About 15 s on 2 cores.

0 and negative numbers mean what they mean in bloomkv.Options: 0 = the
default, negative = off (-filter_bits -1: tables without filters;
-cache_size -1: no block cache).

Flags:
`

// legend prints the lines explaining a table's columns, indented under it,
// when -legend is on.
func legend(sb *strings.Builder, on bool, lines ...string) {
	if !on {
		return
	}
	for _, l := range lines {
		fmt.Fprintf(sb, "  %s\n", l)
	}
	sb.WriteString("\n")
}

var (
	legendLatency = []string{
		"ops: operations timed; ops/s: ops over the seconds they took.",
		"p50/p95/p99/p99.9 µs: that share of operations took at most this many microseconds (p50 = the median); max: the slowest.",
	}
	legendCosts = []string{
		"Per Get, averaged. bits/key: filter bits per key of the tables read (\"10, ignored\": they have filters, the reads did not consult them).",
		"tables: tables whose key range covers the key, so a Get must consider them. filter neg: of those, skipped because the filter said \"absent\".",
		"filter FP: a false positive, the filter said \"maybe\" but the table lacked the key: a block read for nothing. FP rate: FP / (neg + FP), beside the filters' theory.",
		"data blocks: blocks a Get read (from the block cache or the file); bytes read: bytes read from files. cache hits: block reads the cache answered.",
		"found: Gets that found their key (readrandom: all; readmissing: none). -: no figure (nothing to divide by, or no filter consulted).",
	}
	legendSeekCosts = []string{
		"Per seek (SeekGE or SeekPrefixGE and the steps after it), averaged; the columns mean what they mean per Get above.",
	}
	legendCPU = []string{
		"CPU s: the process's user + system CPU time over the workload's timed phase (getrusage), background flushes and compactions",
		"included; cores busy: CPU s / wall s; CPU µs/op: CPU s / ops. Time other programs held the CPUs is not in it, as it is in ops/s.",
	}
	legendLevels = []string{
		"Each cell: tables considered per Get in that level -> data blocks read there per Get. Where blocks are far below tables,",
		"the filters skipped those tables; a present key reads about one block in the level that holds it.",
	}
)

// legendComparison explains the with/without table; n is the baseline's
// reads per workload when the default run made it (0 for -compare_filters).
func legendComparison(n int) []string {
	without := "ignored: the same tables reopened with Options.IgnoreFilters and read with the same keys, all -reads of them."
	if n > 0 {
		without = fmt.Sprintf("ignored: the same tables reopened with Options.IgnoreFilters, reading the first %d of the same keys (-baseline_reads; -compare_filters reads all of them).", n)
	}
	return []string{
		"filters: the reads above, consulting the filters. " + without,
		"ratio = filters / ignored: below 1, the filters saved that share (0.01 = 99% fewer); for ops/s, above 1 is faster.",
		"Block and byte counts are exact counts; times and ops/s are one run on this machine and vary with its load.",
	}
}
