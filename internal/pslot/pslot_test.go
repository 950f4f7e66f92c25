package pslot

import (
	"sync"
	"testing"
	"unsafe"
)

func TestSlotsFor(t *testing.T) {
	for _, c := range []struct{ procs, want int }{{0, 1}, {1, 1}, {2, 2}, {3, 4}, {8, 8}, {9, 16}, {100, MaxN}} {
		if got := slotsFor(c.procs); got != c.want {
			t.Errorf("slotsFor(%d) = %d, want %d", c.procs, got, c.want)
		}
	}
	if N&(N-1) != 0 || N < 1 || N > MaxN {
		t.Fatalf("N = %d", N)
	}
}

func TestIndexInRange(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				if x := Index(); x < 0 || x >= N {
					t.Errorf("Index() = %d, N = %d", x, N)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestCounterSumsConcurrentAdds(t *testing.T) {
	c := NewCounter()
	var wg sync.WaitGroup
	const goroutines, adds = 8, 10000
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < adds; i++ {
				j := Index()
				c.Add(j, 2)
				c.Add(j, -1)
			}
		}()
	}
	wg.Wait()
	if got := c.Sum(); got != goroutines*adds {
		t.Fatalf("Sum = %d, want %d", got, goroutines*adds)
	}
}

func TestCounterSlotsOnSeparateLines(t *testing.T) {
	c := NewCounter()
	if unsafe.Sizeof(slot{}) != cacheLine {
		t.Fatalf("slot is %d bytes", unsafe.Sizeof(slot{}))
	}
	if len(c.slots) != N {
		t.Fatalf("%d slots, want %d", len(c.slots), N)
	}
}

func TestIndexAllocatesNothing(t *testing.T) {
	Index()
	if a := testing.AllocsPerRun(1000, func() { Index() }); a > 0 {
		t.Fatalf("Index allocates %.2f times", a)
	}
}

func BenchmarkIndex(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			Index()
		}
	})
}

func BenchmarkCounterAdd(b *testing.B) {
	c := NewCounter()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(Index(), 1)
		}
	})
}

// BenchmarkSharedAdd is the shared counter that Counter replaces, for
// comparison at -cpu 1,2.
func BenchmarkSharedAdd(b *testing.B) {
	var c struct {
		_ [cacheLine]byte
		n int64
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			atomicAdd(&c.n)
		}
	})
}
