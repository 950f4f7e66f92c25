package bloomkv

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkIterSeekShort creates an iterator, seeks and reads 10 keys: the
// cost of a short scan, iterator creation included.
func BenchmarkIterSeekShort(b *testing.B) {
	db := loadBenchDB(b, benchKeys, nil)
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	k := make([]byte, 16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it := db.NewIterator(nil)
		ok := it.SeekGE(benchKey(k, rng.Uint64N(2*benchKeys)))
		for j := 0; ok && j < 10; j++ {
			ok = it.Next()
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
