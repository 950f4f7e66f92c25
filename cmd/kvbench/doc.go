// Command kvbench measures point lookups in bloomkv and what per-table bloom
// filters buy: latency percentiles, and per Get the tables probed, filter
// negatives and false positives, data blocks and bytes read, and block-cache
// hits, all taken from DB.Metrics. The default run ends with the answer to
// its own question: the same tables read again with Options.IgnoreFilters
// (the first -baseline_reads keys of each workload) beside the filtered
// reads, and a legend under every table.
//
// Usage:
//
//	go run ./cmd/kvbench                                   # 1M keys: fillrandom, readrandom, readmissing, and a without-filters baseline
//	go run ./cmd/kvbench -compare_filters                  # the same tables read with and without filters, every read in both
//	go run ./cmd/kvbench -sweep off,2,4,6,8,10,12,16 -plot sweep.png -json sweep.json
//	go run ./cmd/kvbench -report sweep.json                # print that report again from its JSON, without running
//
// Numbers mean what they mean in bloomkv.Options: 0 is the default and a
// negative value is off (-filter_bits -1: no filters; -cache_size -1: no
// block cache). -bloom_bits is a deprecated alias of -filter_bits.
//
// A -json report records the commit kvbench was built from (run.commit,
// run.commit_modified; printed under the report's first line). `go run`
// stamps no VCS information, so kvbench asks git in the directory its
// source was compiled from; a `go build` binary carries the stamp only
// outside a linked git worktree and where GOFLAGS does not say
// -buildvcs=false (commit.go), and an unstamped one records none.
//
// Run with -h for every flag. docs/studying-filters.md explains the report
// at length and the JSON fields.
//
// Invariants the tool keeps, so that its figures mean what they say:
//
//   - The key space has 2*num slots in key order. Even slots are the keys the
//     fill writes; odd slots are never written. A slot's key is a big-endian
//     64-bit number spread uniformly over [0, 2^64) and strictly increasing
//     with the slot, padded to -key_size with bytes derived from the slot. So
//     every absent key (odd slot 1 .. 2*num-3) lies strictly between two
//     present keys: inside the key range, never cut off by it.
//   - Keys and values depend only on -num, -key_size, -value_size and
//     -compression_ratio, never on -seed, so -use_existing_db finds the
//     keys an earlier run with the same flags wrote. -seed picks the fill
//     order and the keys read.
//   - Each read workload draws its keys from its own generator, seeded by
//     -seed and the workload's name, so two passes over the same database
//     (-compare_filters, every -sweep setting) read exactly the same keys.
//   - Every read workload runs on a settled tree: after the last write the
//     memtable is flushed, WaitForCompactions has returned and the idle
//     compaction has moved level 0 into level 1 (unless
//     -idle_compaction_delay is negative), so no background work runs
//     while reads are timed and every Get is answered by SSTables.
//   - Every cost figure is the difference of two DB.Metrics readings taken
//     around the workload (Metrics.Sub); nothing is modelled. The only
//     computed figure is the theoretical false-positive rate, printed
//     beside the measured one for comparison.
//   - A read of a present key that returns a wrong value, or any engine
//     error, stops the run with an error; kvbench never reports figures
//     for reads that went wrong.
package main
