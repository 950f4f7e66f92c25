package sstable

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

func TestSeparatorExamples(t *testing.T) {
	ik := func(s string, seq uint64) []byte { return kv.MakeInternalKey([]byte(s), seq, kv.KindSet) }
	cases := []struct {
		a, b []byte
		want string // user key of the separator; "=a" means a itself
	}{
		{ik("apple", 5), ik("banana", 1), "b"},
		{ik("abcdef", 5), ik("abzz", 1), "abd"},
		{ik("abcdef", 5), ik("abd", 1), "abce"},
		{ik("abc", 5), ik("abcd", 1), "=a"},     // prefix: cannot shorten
		{ik("ab", 5), ik("ac", 1), "=a"},        // adjacent, nothing to bump
		{ik("same", 9), ik("same", 3), "=a"},    // versions of one key
		{ik("a\xff\xffz", 5), ik("b", 1), "=a"}, // only the last byte is bumpable: not shorter
	}
	for _, c := range cases {
		sep := appendSeparator(nil, c.a, c.b)
		if c.want == "=a" {
			if !bytes.Equal(sep, c.a) {
				t.Errorf("sep(%s, %s) = %s, want a", kv.FormatInternalKey(c.a), kv.FormatInternalKey(c.b), kv.FormatInternalKey(sep))
			}
			continue
		}
		if string(kv.UserKey(sep)) != c.want || kv.Trailer(sep) != kv.MakeTrailer(kv.MaxSeq, kv.KindSeek) {
			t.Errorf("sep(%s, %s) = %s, want %q#max", kv.FormatInternalKey(c.a), kv.FormatInternalKey(c.b), kv.FormatInternalKey(sep), c.want)
		}
	}
	if s := appendSuccessor(nil, ik("hello", 3)); string(kv.UserKey(s)) != "i" {
		t.Errorf("successor(hello) = %s", kv.FormatInternalKey(s))
	}
	if s := appendSuccessor(nil, ik("\xff\xff", 3)); !bytes.Equal(s, ik("\xff\xff", 3)) {
		t.Errorf("successor(ffff) = %s", kv.FormatInternalKey(s))
	}
}

// TestSeparatorProperty checks a <= sep < b and successor >= a on random
// pairs drawn from a small alphabet full of 0x00 and 0xff edge bytes.
func TestSeparatorProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range testScale(100_000) {
		es := randomEntries(rng, 2, 2)
		a, b := es[0].key, es[1].key
		sep := appendSeparator([]byte("junk"), a, b)[4:]
		if kv.CompareInternal(a, sep) > 0 || kv.CompareInternal(sep, b) >= 0 {
			t.Fatalf("sep(%s, %s) = %s", kv.FormatInternalKey(a), kv.FormatInternalKey(b), kv.FormatInternalKey(sep))
		}
		if len(sep) > len(a) {
			t.Fatalf("sep(%s, %s) = %s is longer than a", kv.FormatInternalKey(a), kv.FormatInternalKey(b), kv.FormatInternalKey(sep))
		}
		if s := appendSuccessor(nil, a); kv.CompareInternal(a, s) > 0 || len(s) > len(a) {
			t.Fatalf("successor(%s) = %s", kv.FormatInternalKey(a), kv.FormatInternalKey(s))
		}
	}
}
