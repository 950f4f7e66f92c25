package rangedel

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestGoldenBlock pins the worked example of the package doc.
func TestGoldenBlock(t *testing.T) {
	l := Fragment([]Tombstone{
		{Start: []byte("a"), End: []byte("e"), Seq: 5},
		{Start: []byte("c"), End: []byte("e"), Seq: 9},
	})
	got := hex.EncodeToString(Encode(nil, l.Spans()))
	want := "02" + "0161016301" + "05" + "01630165020905"
	if got != want {
		t.Fatalf("encoding %s, want %s", got, want)
	}
	d, err := Decode(Encode(nil, l.Spans()), 16)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(d.Spans()) != fmt.Sprint(l.Spans()) {
		t.Fatalf("decoded %v, want %v", d.Spans(), l.Spans())
	}
}

// TestFragmentAgainstBruteForce compares MaxSeq over random tombstones
// with a direct scan of them, and checks the spans' shape.
func TestFragmentAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() []byte { return []byte{byte('a' + rng.IntN(20))} }
	for round := 0; round < 300; round++ {
		var ts []Tombstone
		for i := rng.IntN(12); i > 0; i-- {
			a, b := key(), key()
			if rng.IntN(3) == 0 {
				b = append(b, 0)
			}
			ts = append(ts, Tombstone{Start: a, End: b, Seq: uint64(1 + rng.IntN(30))})
		}
		l := Fragment(ts)
		spans := l.Spans()
		for i, s := range spans {
			if bytes.Compare(s.Start, s.End) >= 0 || len(s.Seqs) == 0 ||
				i > 0 && bytes.Compare(spans[i-1].End, s.Start) > 0 {
				t.Fatalf("round %d: bad span %d %v of %v", round, i, s, spans)
			}
			for j := 1; j < len(s.Seqs); j++ {
				if s.Seqs[j] >= s.Seqs[j-1] {
					t.Fatalf("round %d: seqs not descending: %v", round, s.Seqs)
				}
			}
		}
		for c := byte('a' - 1); c <= 'a'+21; c++ {
			for _, k := range [][]byte{{c}, {c, 0}, {c, 5}} {
				for _, read := range []uint64{0, 5, 15, 100} {
					want := uint64(0)
					for _, tb := range ts {
						if bytes.Compare(tb.Start, k) <= 0 && bytes.Compare(k, tb.End) < 0 && tb.Seq <= read {
							want = max(want, tb.Seq)
						}
					}
					if got := l.MaxSeq(k, read); got != want {
						t.Fatalf("round %d: MaxSeq(%q, %d) = %d, want %d; tombstones %v", round, k, read, got, want, ts)
					}
				}
			}
		}
		// Merge of the halves is the whole; the encoding round-trips.
		h := len(ts) / 2
		m := Merge(Fragment(ts[:h]), Fragment(ts[h:]))
		if fmt.Sprint(m.Spans()) != fmt.Sprint(spans) {
			t.Fatalf("round %d: merge %v, want %v", round, m.Spans(), spans)
		}
		d, err := Decode(Encode(nil, spans), 16)
		if err != nil || fmt.Sprint(d.Spans()) != fmt.Sprint(spans) {
			t.Fatalf("round %d: decode %v, %v", round, d.Spans(), err)
		}
	}
}

func spansString(spans []Span) string {
	var b bytes.Buffer
	for _, s := range spans {
		fmt.Fprintf(&b, "[%s,%s)%v ", s.Start, s.End, s.Seqs)
	}
	return b.String()
}

func TestClip(t *testing.T) {
	l := Fragment([]Tombstone{{Start: []byte("a"), End: []byte("m"), Seq: 3}, {Start: []byte("f"), End: []byte("z"), Seq: 7}})
	got := spansString(l.Clip([]byte("c"), []byte("g"), nil))
	want := "[c,f)[3] [f,g)[7 3] "
	if got != want {
		t.Fatalf("Clip = %s, want %s", got, want)
	}
	got = spansString(l.Clip(nil, nil, func(_ Span, q uint64) bool { return q > 3 }))
	if want := "[f,m)[7] [m,z)[7] "; got != want {
		t.Fatalf("Clip keep = %s, want %s", got, want)
	}
	if string(InclusiveEnd([]byte("k\x00"))) != "k" || string(InclusiveEnd([]byte("k"))) != "k" {
		t.Fatal("InclusiveEnd")
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, c := range []struct{ name, hex string }{
		{"empty", ""},
		{"count too large", "05"},
		{"start not before end", "01" + "0162016101" + "05"},
		{"overlap", "02" + "0161016301" + "05" + "0162016401" + "05"},
		{"seqs not descending", "01" + "0161016302" + "0509"},
		{"seq zero", "01" + "0161016301" + "00"},
		{"no seqs", "01" + "0161016300"},
		{"trailing", "01" + "0161016301" + "05" + "00"},
		{"empty key", "01" + "00016301" + "05"},
	} {
		b, _ := hex.DecodeString(c.hex)
		if _, err := Decode(b, 16); err == nil {
			t.Errorf("%s: decoded", c.name)
		}
	}
}

// FuzzDecode: any bytes decode to a well-formed list or an error, never a
// panic; what decodes re-encodes to a block that decodes to the same list.
func FuzzDecode(f *testing.F) {
	f.Add(Encode(nil, Fragment([]Tombstone{{Start: []byte("a"), End: []byte("e"), Seq: 5}, {Start: []byte("c"), End: []byte("g"), Seq: 9}}).Spans()))
	f.Add([]byte{0})
	f.Add([]byte{1, 1, 'a', 1, 'b', 1, 5})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := Decode(b, 64)
		if err != nil {
			return
		}
		again, err := Decode(Encode(nil, l.Spans()), 64)
		if err != nil || fmt.Sprint(again.Spans()) != fmt.Sprint(l.Spans()) {
			t.Fatalf("re-encoding: %v, %v vs %v", err, again.Spans(), l.Spans())
		}
		for _, s := range l.Spans() {
			l.MaxSeq(s.Start, ^uint64(0))
		}
	})
}
