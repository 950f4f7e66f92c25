package filter

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	bbloom "github.com/bits-and-blooms/bloom/v3"
)

// Benchmarks use a filter sized for benchN keys at 1% (about 1.2 MB for a
// Bloom: larger than L2, as real filters are) and 16-byte keys.
const benchN = 1_000_000

// benchKeys returns 1<<16 distinct 16-byte keys with the given prefix
// byte, cycled through by the benchmark loops.
func benchKeys(prefix byte) [][]byte {
	keys := make([][]byte, 1<<16)
	for i := range keys {
		k := make([]byte, 16)
		k[0] = prefix
		binary.LittleEndian.PutUint64(k[8:], uint64(i)*0x9e3779b97f4a7c15)
		keys[i] = k
	}
	return keys
}

// presentKey is the i-th key of the set benchmarks fill filters with.
func presentKey(dst []byte, i int) []byte {
	dst = append(dst[:0], 'p', 0, 0, 0, 0, 0, 0, 0)
	return binary.LittleEndian.AppendUint64(dst, uint64(i))
}

func filledBloom(b *testing.B) *Bloom {
	f := must(NewBloom(benchN, 0.01))
	var k []byte
	for i := 0; i < benchN; i++ {
		k = presentKey(k, i)
		f.Add(k)
	}
	return f
}

func BenchmarkBloomAdd(b *testing.B) {
	f := must(NewBloom(benchN, 0.01))
	keys := benchKeys('p')
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Add(keys[i&(len(keys)-1)])
	}
}

func BenchmarkBloomMayContain(b *testing.B) {
	f := filledBloom(b)
	keys := benchKeys('a') // absent: the common case of a filter guarding lookups
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.MayContain(keys[i&(len(keys)-1)])
	}
}

func BenchmarkBloomMayContainBatch(b *testing.B) {
	f := filledBloom(b)
	keys := benchKeys('a')
	const batch = 256
	dst := make([]bool, 0, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch { // ns/op is per key
		j := i & (len(keys) - 1)
		dst = f.MayContainBatch(keys[j:j+batch], dst[:0])
	}
}

// BenchmarkBloomParallel shows Add and MayContain scaling across cores with
// no lock (atomic OR on words).
func BenchmarkBloomParallel(b *testing.B) {
	f := filledBloom(b)
	keys := benchKeys('a')
	for _, op := range []string{"Add", "MayContain"} {
		b.Run(op, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					k := keys[i&(len(keys)-1)]
					if op == "Add" {
						f.Add(k)
					} else {
						f.MayContain(k)
					}
					i++
				}
			})
		})
	}
}

func BenchmarkCountingAdd(b *testing.B) {
	f := must(NewCounting(benchN, 0.01))
	keys := benchKeys('p')
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Add(keys[i&(len(keys)-1)])
	}
}

func BenchmarkCountingRemove(b *testing.B) {
	f := must(NewCounting(benchN, 0.01))
	keys := benchKeys('p')
	for _, k := range keys {
		f.Add(k)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i&(len(keys)-1)]
		_ = f.Remove(k)
		f.Add(k) // keep it removable; Add costs about what Remove does
	}
}

func BenchmarkCountingMayContain(b *testing.B) {
	f := must(NewCounting(benchN, 0.01))
	var k []byte
	for i := 0; i < benchN; i++ {
		k = presentKey(k, i)
		f.Add(k)
	}
	keys := benchKeys('a')
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.MayContain(keys[i&(len(keys)-1)])
	}
}

func BenchmarkCuckooAdd(b *testing.B) {
	f := must(NewCuckoo(benchN, 0.01))
	var k []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%benchN == benchN-1 { // refill from empty: average over loads 0..90%
			b.StopTimer()
			f.Reset()
			b.StartTimer()
		}
		k = presentKey(k, i)
		if err := f.Add(k); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCuckooMayContain(b *testing.B) {
	f := must(NewCuckoo(benchN, 0.01))
	var k []byte
	for i := 0; i < benchN; i++ {
		k = presentKey(k, i)
		if err := f.Add(k); err != nil {
			b.Fatal(err)
		}
	}
	keys := benchKeys('a')
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.MayContain(keys[i&(len(keys)-1)])
	}
}

func BenchmarkScalableAdd(b *testing.B) {
	f := must(NewScalable(1000, 0.01))
	var k []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k = presentKey(k, i)
		f.Add(k)
	}
	b.ReportMetric(float64(f.Layers()), "layers")
}

func BenchmarkScalableMayContain(b *testing.B) {
	// Grown from 1000 to a million keys: 10 layers, each probed on a miss.
	f := must(NewScalable(1000, 0.01))
	var k []byte
	for i := 0; i < benchN; i++ {
		k = presentKey(k, i)
		f.Add(k)
	}
	keys := benchKeys('a')
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.MayContain(keys[i&(len(keys)-1)])
	}
	b.ReportMetric(float64(f.Layers()), "layers")
}

// BenchmarkVsBitsAndBlooms compares Bloom with bits-and-blooms/bloom/v3 at
// equal memory: the same m bits and k probes, the same million keys. Each
// MayContain benchmark also reports the false-positive rate measured on a
// million absent keys ("fp%") beside the theoretical one.
func BenchmarkVsBitsAndBlooms(b *testing.B) {
	for _, fpp := range []float64{0.01, 0.001} {
		ours := must(NewBloom(benchN, fpp))
		theirs := bbloom.New(uint(ours.Bits()), uint(ours.NumProbes()))
		var k []byte
		for i := 0; i < benchN; i++ {
			k = presentKey(k, i)
			ours.Add(k)
			theirs.Add(k)
		}
		theory := 100 * TheoreticalFPR(ours.Bits(), benchN, ours.NumProbes())
		ourFP, _ := measureFPR(1_000_000, ours.MayContain)
		theirFP, _ := measureFPR(1_000_000, theirs.Test)
		addKeys, probeKeys := benchKeys('q'), benchKeys('a')
		name := fmt.Sprintf("fpp=%v/m=%d/k=%d", fpp, ours.Bits(), ours.NumProbes())
		b.Run(name+"/bloomkv/Add", func(b *testing.B) {
			f := ours.Clone()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f.Add(addKeys[i&(len(addKeys)-1)])
			}
		})
		b.Run(name+"/bits-and-blooms/Add", func(b *testing.B) {
			f := theirs.Copy()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f.Add(addKeys[i&(len(addKeys)-1)])
			}
		})
		b.Run(name+"/bloomkv/MayContain", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				ours.MayContain(probeKeys[i&(len(probeKeys)-1)])
			}
			b.ReportMetric(100*ourFP, "fp%")
			b.ReportMetric(theory, "theory-fp%")
		})
		b.Run(name+"/bits-and-blooms/Test", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				theirs.Test(probeKeys[i&(len(probeKeys)-1)])
			}
			b.ReportMetric(100*theirFP, "fp%")
			b.ReportMetric(theory, "theory-fp%")
		})
	}
}

func BenchmarkBloomMarshal(b *testing.B) {
	f := filledBloom(b)
	b.SetBytes(int64(f.SizeBytes()))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		data, _ := f.MarshalBinary()
		var g Bloom
		if err := g.UnmarshalBinary(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBloomReadFrom and BenchmarkBloomLoadChunks decode a valid
// stream: allocating as bytes arrive (arrivals.go) must not make it
// costlier than trusting the length was.
func BenchmarkBloomReadFrom(b *testing.B) {
	f := filledBloom(b)
	data, _ := f.MarshalBinary()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var g Bloom
		if _, err := g.ReadFrom(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBloomLoadChunks(b *testing.B) {
	f := filledBloom(b)
	var dump bytes.Buffer
	if _, err := DumpChunks(&dump, f, 64<<10); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(dump.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var g Bloom
		if _, err := LoadChunks(bytes.NewReader(dump.Bytes()), &g); err != nil {
			b.Fatal(err)
		}
	}
}
