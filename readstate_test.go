package bloomkv

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/pslot"
	"github.com/bloomkv/bloomkv/vfs"
)

// newTestReadState returns a published read state over a fresh version,
// and a function reporting how many times the version was released.
func newTestReadState() (*readState, func() int) {
	var released atomic.Int32
	set := manifest.NewVersionSet(vfs.NewMem(), "/db", &manifest.State{},
		manifest.Options{OnRelease: func() { released.Add(1) }})
	// The state takes over the set's reference to its current version, as
	// if a newer version had been installed.
	s := &readState{v: set.Current()}
	s.refs.Init()
	return s, func() int { return int(released.Load()) }
}

func TestReadStateReleasesOnceAfterRetire(t *testing.T) {
	s, released := newTestReadState()
	if !s.ref(0) || !s.ref(pslot.N-1) {
		t.Fatal("ref of a published state failed")
	}
	s.retire()
	if s.ref(0) {
		t.Fatal("ref of a retired state succeeded")
	}
	s.unref(0)
	if released() != 0 {
		t.Fatal("released with a holder left")
	}
	s.unref(pslot.N - 1)
	if released() != 1 {
		t.Fatalf("released %d times after the last holder left, want 1", released())
	}
	s.retire() // a second sum that sees zero must not release again
	if released() != 1 {
		t.Fatalf("released %d times", released())
	}

	s, released = newTestReadState()
	s.retire()
	if released() != 1 {
		t.Fatalf("a retired state nobody holds released %d times, want 1", released())
	}
}

// TestReadStateRefRacesRetire: goroutines take and drop references in
// arbitrary slots (as goroutines moving between Ps do) while the state is
// retired. A reference that succeeds must find the version not yet
// released, for as long as it is held; the version is released exactly
// once. Run it with -race.
func TestReadStateRefRacesRetire(t *testing.T) {
	rounds := 2000
	if testing.Short() {
		rounds = 300
	}
	for range rounds {
		s, released := newTestReadState()
		var wg sync.WaitGroup
		var bad atomic.Int32
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					slot := (g + i) % (2 * pslot.N)
					if !s.ref(slot) {
						return
					}
					if s.released.Load() {
						bad.Add(1)
					}
					s.unref(slot)
				}
			}()
		}
		s.retire()
		wg.Wait()
		if bad.Load() != 0 {
			t.Fatalf("%d references held a released state", bad.Load())
		}
		if released() != 1 {
			t.Fatalf("released %d times, want 1", released())
		}
	}
}
