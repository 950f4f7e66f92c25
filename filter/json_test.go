package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestJSONRoundTrip: every filter type marshals to JSON and back to the
// same bytes and answers, also inside a struct (Bloom by value too); damaged
// JSON is an error wrapping ErrCorruption, never a filter that says "maybe"
// to everything.
func TestJSONRoundTrip(t *testing.T) {
	for _, cc := range codecCases {
		t.Run(cc.name, func(t *testing.T) {
			f := cc.build(t)
			data, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) == "{}" || data[0] != '"' {
				t.Fatalf("JSON is %s, want a base64 string", data)
			}
			back := cc.empty()
			if err := json.Unmarshal(data, back); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(mustMarshal(t, back), mustMarshal(t, f)) {
				t.Fatal("JSON round trip changed the encoding")
			}
			m := back.(interface{ MayContain([]byte) bool })
			for _, k := range goldenKeys {
				if !m.MayContain([]byte(k)) {
					t.Fatalf("%q lost in the round trip", k)
				}
			}
			absent := 0
			for i := range 1000 {
				if !m.MayContain(keyN('z', i)) {
					absent++
				}
			}
			if absent == 0 {
				t.Fatal("the decoded filter says maybe to every key")
			}

			// Damage: a flipped base64 character, a number, an object, a
			// truncated string, valid base64 of garbage.
			s := string(data)
			flip := []byte(s)
			i := len(flip) / 2
			if flip[i] == 'A' {
				flip[i] = 'B'
			} else {
				flip[i] = 'A'
			}
			for name, bad := range map[string]string{
				"flipped": string(flip), "number": "42", "object": "{}",
				"cut": s[:len(s)/2] + `"`, "garbage": `"aGVsbG8gd29ybGQ="`,
			} {
				dst := cc.empty()
				err := json.Unmarshal([]byte(bad), dst)
				if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), cc.name) {
					t.Errorf("%s: %v, want ErrCorruption naming the %s filter", name, err, cc.name)
				}
			}
			// null leaves the receiver as it was.
			if err := json.Unmarshal([]byte("null"), back); err != nil || !bytes.Equal(mustMarshal(t, back), mustMarshal(t, f)) {
				t.Fatalf("null: %v", err)
			}
		})
	}
}

func TestJSONBloomByValue(t *testing.T) {
	b := must(NewBloom(100, 0.01))
	b.Add([]byte("x"))
	type doc struct {
		Name   string
		Filter Bloom // by value: MarshalJSON must not need an address
	}
	data, err := json.Marshal(doc{"d", *b.Clone()})
	if err != nil {
		t.Fatal(err)
	}
	var back doc
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Filter.Equal(b) {
		t.Fatalf("by-value Bloom did not round-trip: %s", data)
	}
}

// TestZeroFilters: every zero filter panics with ErrZeroFilter when asked,
// added to or removed from (a zero Bloom or Counting would say "maybe" to
// everything, a zero Cuckoo "absent"), and refuses to be encoded (its encoding
// would not decode); decoding into a zero filter works.
func TestZeroFilters(t *testing.T) {
	var zero Bloom
	var zc Counting
	var zk Cuckoo
	var zs Scalable
	for name, call := range map[string]func(){
		"Bloom.MayContain":    func() { zero.MayContain([]byte("k")) },
		"Bloom.Add":           func() { zero.Add([]byte("k")) },
		"Counting.MayContain": func() { zc.MayContain([]byte("k")) },
		"Counting.Add":        func() { zc.Add([]byte("k")) },
		"Counting.Remove":     func() { _ = zc.Remove([]byte("k")) },
		"Cuckoo.MayContain":   func() { zk.MayContain([]byte("k")) },
		"Cuckoo.Add":          func() { _ = zk.Add([]byte("k")) },
		"Cuckoo.Remove":       func() { _ = zk.Remove([]byte("k")) },
		"Scalable.MayContain": func() { zs.MayContain([]byte("k")) },
		"Scalable.Add":        func() { zs.Add([]byte("k")) },
	} {
		func() {
			defer func() {
				if r := recover(); r != ErrZeroFilter {
					t.Errorf("zero %s: recovered %v, want a panic with ErrZeroFilter", name, r)
				}
			}()
			call()
		}()
	}
	for _, cc := range codecCases {
		z := cc.empty()
		if _, err := z.MarshalBinary(); !errors.Is(err, ErrZeroFilter) {
			t.Errorf("%s: MarshalBinary of a zero filter: %v", cc.name, err)
		}
		if _, err := z.WriteTo(&bytes.Buffer{}); !errors.Is(err, ErrZeroFilter) {
			t.Errorf("%s: WriteTo of a zero filter: %v", cc.name, err)
		}
		if _, err := json.Marshal(z); !errors.Is(err, ErrZeroFilter) {
			t.Errorf("%s: json.Marshal of a zero filter: %v", cc.name, err)
		}
		if err := z.UnmarshalBinary(mustMarshal(t, cc.build(t))); err != nil {
			t.Errorf("%s: decoding into a zero filter: %v", cc.name, err)
		}
	}
}
