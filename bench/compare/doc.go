// Command compare runs the same db_bench-style workloads against bloomkv,
// Pebble v2 and goleveldb at equal durability, and prints one table per
// durability pairing with each engine's ops/s (median and min-max over the
// runs), p50 and p99 latency and the ratio bloomkv/peer, then per engine the
// fill's settle time and write amplification, the memory it held for reads
// and its peak RSS, and the compactions that ran while reads were timed;
// -json writes every figure, and -report prints the tables again from it.
//
// Usage (from bench/compare, a module of its own so that the library's
// go.mod gains no dependency):
//
//	go run . -num 1000000 -compression_ratio 1 -runs 3 -json out.json
//	go run . -report out.json                  # the same tables, from the JSON
//	go run . -settings matched                 # the tree's shape set alike too
//	go run . -durability sync -num 100000      # synced writes, 8 concurrent writers
//
// What the harness holds to, so that a ratio means what it says:
//
//   - Durability pairings: an engine takes part in a pairing only if it has
//     a mode that promises the same thing (see README.md); the others are
//     listed with the reason they are absent.
//   - Each engine's own defaults (-settings defaults): only the block
//     cache, block size, bloom bits per key (on every level) and memtable
//     size are set alike; -settings matched sets the tree's shape alike too.
//     Where an engine's defaults or accounting differ the report says what
//     was set instead (the engines' settingNotes).
//   - Equal memory (-memory equal): what an engine holds for reads, block
//     cache plus what it keeps outside it, is -cache_size for every engine.
//   - Equal settling (settle.go): one rule for every engine, then every
//     database is reopened so that every cache starts cold for the reads.
//   - Keys: slot 2i is the i-th key the fills write, slot 2i+1 is never
//     written and lies strictly between its neighbours, so readmissing asks
//     for absent keys inside the key range. Keys and values depend only on
//     -num, -key_size, -value_size and -compression_ratio; -seed picks the
//     fillrandom order and the keys read, the same for every engine.
//   - Every database is fresh, in its own temporary directory; the engine
//     order turns by one place each run; garbage is collected and returned
//     to the OS before every timed phase.
//   - Every Get is checked (a present key found with its value, an absent
//     key not found), every scan's seek must land on its key, and a full
//     scan must find exactly -num keys in order before and after the
//     reads. A surprise stops the run: no figure is reported for work that
//     went wrong.
package main
