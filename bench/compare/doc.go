// Command compare runs the same db_bench-style workloads against bloomkv,
// Pebble v2 and goleveldb with equal settings and equal durability, and
// prints one table per durability pairing with each engine's ops/s, p50
// and p99 latency and the ratio bloomkv/peer; -json writes every figure.
//
// Usage (from bench/compare, a module of its own so that the library's
// go.mod gains no dependency):
//
//	go run . -num 1000000                      # write-through and buffered pairings
//	go run . -durability sync -num 100000      # synced writes, 8 concurrent writers
//	go run . -runs 3 -json out.json            # medians of 3 runs, engines interleaved
//
// What the harness holds to, so that a ratio means what it says:
//
//   - Durability pairings: an engine takes part in a pairing only if it has
//     a mode that promises the same thing (see README.md); the others are
//     listed with the reason they are absent.
//   - Equal settings: every engine gets the same block size, compression,
//     bloom bits per key on every level, block cache, memtable size, level-0
//     triggers, level-1 target and multiplier, table size and open-file
//     limit; where an engine's defaults or accounting differ the report
//     says what was set instead (the engines' settingNotes).
//   - Keys: slot 2i is the i-th key the fills write, slot 2i+1 is never
//     written and lies strictly between its neighbours, so readmissing asks
//     for absent keys inside the key range. Keys and values depend only on
//     -num, -key_size, -value_size and -compression_ratio; -seed picks the
//     fillrandom order and the keys read, the same for every engine.
//   - Every database is fresh, in its own temporary directory. Reads run on
//     the fillrandom database after it settled (memtable flushed, no
//     compaction running or due), and the harness settles it again before
//     each read workload.
//   - Every Get is checked (a present key found with its value, an absent
//     key not found), every scan's seek must land on its key, and after the
//     workloads a full scan must find exactly -num keys in order. A surprise
//     stops the run: no figure is reported for work that went wrong.
package main
