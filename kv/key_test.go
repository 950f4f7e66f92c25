package kv

import (
	"encoding/hex"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestInternalKeyOrder(t *testing.T) {
	// User key ascending, then sequence descending; a search key sorts
	// before every stored version at or below its sequence.
	keys := [][]byte{
		MakeInternalKey([]byte("a"), 9, KindSet),
		MakeInternalKey([]byte("a"), 5, KindDelete),
		MakeInternalKey([]byte("a"), 5-1, KindSet),
		MakeInternalKey([]byte("ab"), 100, KindSet),
		MakeInternalKey([]byte("b"), 1, KindSet),
	}
	shuffled := append([][]byte{}, keys...)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	sort.Slice(shuffled, func(i, j int) bool { return CompareInternal(shuffled[i], shuffled[j]) < 0 })
	for i := range keys {
		if string(shuffled[i]) != string(keys[i]) {
			t.Fatalf("position %d: %s, want %s", i, FormatInternalKey(shuffled[i]), FormatInternalKey(keys[i]))
		}
	}
	s := MakeSearchKey([]byte("a"), 5)
	if CompareInternal(s, keys[1]) >= 0 || CompareInternal(s, keys[0]) <= 0 {
		t.Fatalf("search key %s misplaced", FormatInternalKey(s))
	}
}

func TestInternalKeyGolden(t *testing.T) {
	// "k", seq 258, SET: trailer 258<<8|1 = 0x10201 little-endian.
	got := hex.EncodeToString(MakeInternalKey([]byte("k"), 258, KindSet))
	if want := "6b" + "0102010000000000"; got != want {
		t.Fatalf("encoding %s, want %s", got, want)
	}
	u, seq, kind, ok := ParseInternalKey(MakeInternalKey([]byte("k"), 258, KindSet))
	if !ok || string(u) != "k" || seq != 258 || kind != KindSet {
		t.Fatalf("parse: %q %d %v %v", u, seq, kind, ok)
	}
	if _, _, _, ok := ParseInternalKey([]byte("short")); ok {
		t.Fatal("a 5-byte key parsed")
	}
	if _, _, _, ok := ParseInternalKey(MakeSearchKey([]byte("k"), 1)); ok {
		t.Fatal("a search key parsed as a stored key")
	}
}
