package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/bloomkv/bloomkv/filter"
)

// Filter build and probe cost for -filter_sweep, measured on the run's own
// keys: the sweep's trees tell what each setting lets through, these
// timings what it costs in CPU. Filters are built as tables would be, in
// chunks of costTableKeys keys; probes are absent keys spread over the
// chunks, hashing included (as a Get pays it).

const (
	costTableKeys = 16 << 10  // keys per filter: a 2 MiB table of ~120 B entries
	costMaxKeys   = 128 << 10 // keys built over at most
	costProbes    = 256 << 10 // absent keys probed
	costRounds    = 3
)

// filterCost returns the build time per key and the time per probe of
// variant v at bits per key over the first keys of ks, and the measured
// false-positive rate of those probes.
func filterCost(ks *keySpace, v filter.Variant, bits float64, seed uint64) (buildNsPerKey, probeNs, fpRate float64, err error) {
	n := min(ks.num, costMaxKeys)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = ks.key(nil, presentSlot(i))
	}
	// Each phase runs costRounds times and keeps its fastest round: a
	// shared machine's interruptions only ever add time.
	var blocks []filter.Block
	buildNsPerKey = math.Inf(1)
	for range costRounds {
		blocks = blocks[:0]
		start := time.Now()
		for lo := 0; lo < n; lo += costTableKeys {
			b, err := filter.NewBlockBuilderBits(bits, v)
			if err != nil {
				return 0, 0, 0, fmt.Errorf("filter cost: %w", err)
			}
			for _, k := range keys[lo:min(lo+costTableKeys, n)] {
				b.AddKey(k)
			}
			blk, err := filter.DecodeBlock(b.Finish())
			if err != nil {
				return 0, 0, 0, fmt.Errorf("filter cost: %w", err)
			}
			blocks = append(blocks, blk)
		}
		buildNsPerKey = min(buildNsPerKey, float64(time.Since(start).Nanoseconds())/float64(n))
	}

	rng := rand.New(rand.NewPCG(seed, 0x636f7374))
	probes := make([][]byte, min(costProbes, 8*n))
	for i := range probes {
		probes[i] = ks.key(nil, ks.randomAbsent(rng))
	}
	positives := 0
	probeNs = math.Inf(1)
	for range costRounds {
		positives = 0
		start := time.Now()
		for i, k := range probes {
			if blocks[i%len(blocks)].MayContain(k) {
				positives++
			}
		}
		probeNs = min(probeNs, float64(time.Since(start).Nanoseconds())/float64(len(probes)))
	}
	return buildNsPerKey, probeNs, float64(positives) / float64(len(probes)), nil
}
