package manifest

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// bruteOverlaps is the obvious scan Overlaps must agree with.
func bruteOverlaps(v *Version, level int, lo, hi []byte) []*FileMetadata {
	var out []*FileMetadata
	for _, f := range v.Levels[level] {
		if lo != nil && bytes.Compare(base.UserKey(f.Largest), lo) < 0 {
			continue
		}
		if hi != nil && bytes.Compare(base.UserKey(f.Smallest), hi) > 0 {
			continue
		}
		if lo != nil && hi != nil && bytes.Compare(lo, hi) > 0 {
			continue
		}
		out = append(out, f)
	}
	return out
}

func TestOverlapsMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	bound := func() []byte {
		if rng.IntN(6) == 0 {
			return nil
		}
		k := userKey(rng.IntN(210))
		if rng.IntN(3) == 0 {
			k += "x" // between two keys of the space
		}
		return []byte(k)
	}
	for range 300 {
		v := randomVersion(t, rng)
		for range 50 {
			level := rng.IntN(NumLevels)
			lo, hi := bound(), bound()
			got, want := v.Overlaps(level, lo, hi), bruteOverlaps(v, level, lo, hi)
			if !slices.Equal(got, want) {
				t.Fatalf("Overlaps(L%d, %q, %q) = %v, brute force %v", level, lo, hi, got, want)
			}
		}
	}
}

func TestOverlapsResultCannotClobberVersion(t *testing.T) {
	v := &Version{}
	v.Levels[1] = []*FileMetadata{meta(1, "a", "b", 1), meta(2, "c", "d", 1), meta(3, "e", "f", 1)}
	got := v.Overlaps(1, []byte("a"), []byte("c"))
	if len(got) != 2 {
		t.Fatalf("got %v", got)
	}
	_ = append(got, meta(9, "x", "y", 1))
	if v.Levels[1][2].FileNum != 3 {
		t.Fatal("appending to an Overlaps result changed the version")
	}
}

func TestOverlapsEndpointsInclusive(t *testing.T) {
	v := &Version{}
	v.Levels[2] = []*FileMetadata{meta(1, "b", "d", 1), meta(2, "f", "h", 1)}
	v.Levels[0] = []*FileMetadata{meta(4, "a", "c", 9), meta(3, "c", "z", 2)}
	check := func(level int, lo, hi string, want ...uint64) {
		t.Helper()
		var l, h []byte
		if lo != "" {
			l = []byte(lo)
		}
		if hi != "" {
			h = []byte(hi)
		}
		var got []uint64
		for _, f := range v.Overlaps(level, l, h) {
			got = append(got, f.FileNum)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Overlaps(L%d, %q, %q) = %v, want %v", level, lo, hi, got, want)
		}
	}
	check(2, "d", "f", 1, 2)
	check(2, "e", "e")
	check(2, "", "b", 1)
	check(2, "h", "", 2)
	check(2, "", "", 1, 2)
	check(2, "g", "c") // empty range
	check(0, "c", "c", 4, 3)
	check(0, "d", "", 3)
	check(5, "", "")
}

func TestCheckInvariants(t *testing.T) {
	mk := func(setup func(v *Version)) *Version {
		v := &Version{}
		setup(v)
		return v
	}
	bad := map[string]*Version{
		"duplicate number": mk(func(v *Version) {
			v.Levels[0] = []*FileMetadata{meta(1, "a", "b", 5)}
			v.Levels[3] = []*FileMetadata{meta(1, "c", "d", 5)}
		}),
		"L1 overlap":  mk(func(v *Version) { v.Levels[1] = []*FileMetadata{meta(1, "a", "c", 1), meta(2, "c", "d", 1)} }),
		"L1 unsorted": mk(func(v *Version) { v.Levels[1] = []*FileMetadata{meta(1, "e", "f", 1), meta(2, "a", "b", 1)} }),
		"L0 oldest first": mk(func(v *Version) {
			v.Levels[0] = []*FileMetadata{meta(1, "a", "b", 1), meta(2, "a", "b", 2)}
		}),
		"L0 tie by lower number first": mk(func(v *Version) {
			v.Levels[0] = []*FileMetadata{meta(1, "a", "b", 2), meta(2, "a", "b", 2)}
		}),
		"smallest > largest": mk(func(v *Version) { v.Levels[2] = []*FileMetadata{meta(1, "b", "a", 1)} }),
		"nil file":           mk(func(v *Version) { v.Levels[4] = []*FileMetadata{nil} }),
		"short key": mk(func(v *Version) {
			f := meta(1, "a", "b", 1)
			f.Smallest = []byte("a")
			v.Levels[1] = []*FileMetadata{f}
		}),
	}
	for name, v := range bad {
		err := v.CheckInvariants()
		if err == nil || !strings.HasPrefix(err.Error(), "bloomkv/manifest: version invariant violated: ") {
			t.Errorf("%s: CheckInvariants = %v", name, err)
		}
	}
	good := mk(func(v *Version) {
		v.Levels[0] = []*FileMetadata{meta(3, "a", "z", 7), meta(5, "a", "z", 6), meta(4, "a", "z", 6)}
		v.Levels[1] = []*FileMetadata{meta(1, "a", "b", 1), meta(2, "ba", "c", 1)}
	})
	if err := good.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if good.NumFiles(0) != 3 || good.NumFiles(1) != 2 || good.NumFiles(2) != 0 {
		t.Fatal("NumFiles")
	}
	if good.LevelBytes(1) != 300 || good.LevelBytes(0) != 1200 {
		t.Fatalf("LevelBytes = %d, %d", good.LevelBytes(1), good.LevelBytes(0))
	}
}

func TestFileMetadataString(t *testing.T) {
	got := meta(12, "a", "k", 9).String()
	want := `000012:["a"#9,SET-"k"#9,SET] seqs 9-9 size 1200`
	if got != want {
		t.Fatalf("String() = %s, want %s", got, want)
	}
}
