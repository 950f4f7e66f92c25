package manifest

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestChargeReadOnce: however readers interleave their charges, and
// whatever their sizes, exactly one call reports reaching the limit, and
// past it the count stops growing (readers only load it).
func TestChargeReadOnce(t *testing.T) {
	for _, n := range []int64{1, 3, 32} {
		f := &FileMetadata{}
		const limit = 1000
		var reached atomic.Int32
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2000; i++ {
					w := n
					if g%2 == 1 {
						w = 1
					}
					if f.ChargeRead(w, limit) {
						reached.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if r := reached.Load(); r != 1 {
			t.Fatalf("charges of %d: %d calls reported reaching the limit, want 1", n, r)
		}
		// At most one charge per reader may land after the limit was seen.
		if c := f.ReadCharges(); c < limit || c >= limit+4*n {
			t.Fatalf("charges of %d: counter %d, want within [%d, %d)", n, c, limit, limit+4*n)
		}
	}
}
