package filter

import (
	"io"
)

// Bloom body (kind 1), inside the envelope described in encoding.go:
//
//	offset  size    field
//	0       8       m, bits: a positive multiple of 64, at most 2^46 (on
//	                32-bit platforms at most 2^31-1: see maxBloomBits)
//	8       4       k, probes: 1..30
//	12      4       reserved, zero
//	16      m/8     bit array as m/64 uint64 words; bit i is bit i%64 of
//	                word i/64 (byte-for-byte a filter block's bit array)
//
// Worked example (pinned by TestBloomGoldenEncoding): NewBloomWithShape(64,
// 3) after Add("apple"), Add("banana"), Add("cherry") encodes as
//
//	42 4b 56 46 01 01 00 00  18 00 00 00 00 00 00 00   "BKVF", v1, bloom, L=24
//	40 00 00 00 00 00 00 00  03 00 00 00 00 00 00 00   m=64, k=3, reserved
//	<8 bytes of bit array>   <4 bytes CRC-32C>
const bloomBodyFixed = 16

func (b *Bloom) bodyLen() uint64 { return bloomBodyFixed + b.m/8 }

func (b *Bloom) encodeBody(e *encoder) {
	e.u64(b.m)
	e.u32(uint32(b.k))
	e.u32(0)
	e.words(b.words)
}

// decodeBloomBody reads a Bloom body; Scalable layers reuse it.
func decodeBloomBody(d *decoder) *Bloom {
	at := d.off
	m := d.u64("bloom bit count")
	d.check(m > 0 && m%64 == 0 && m <= maxBloomBits, at, "bloom bit count %d is not a positive multiple of 64 up to %d", m, uint64(maxBloomBits))
	at = d.off
	k := d.u32("bloom probe count")
	d.check(k >= 1 && k <= MaxProbes, at, "bloom probe count %d is outside [1, %d]", k, MaxProbes)
	d.zero32("bloom reserved field")
	words := d.words(m/64, "bloom bit array")
	if d.err != nil {
		return nil
	}
	return &Bloom{words: words, m: m, k: int(k)}
}

// MarshalBinary encodes b in the versioned, checksummed format above.
func (b *Bloom) MarshalBinary() ([]byte, error) {
	if b.k == 0 {
		return nil, ErrZeroFilter
	}
	return marshal(kindBloom, b), nil
}

// UnmarshalBinary replaces b with the filter encoded in data. Damaged or
// foreign input yields an error wrapping ErrCorruption and leaves b as it
// was.
func (b *Bloom) UnmarshalBinary(data []byte) error {
	body, err := openEnvelope(kindBloom, data)
	if err != nil {
		return err
	}
	return b.setFromBody(body)
}

// WriteTo writes b's encoding to w, streaming the bit array, and returns the
// bytes written.
func (b *Bloom) WriteTo(w io.Writer) (int64, error) {
	if b.k == 0 {
		return 0, ErrZeroFilter
	}
	return writeEnvelope(w, kindBloom, b)
}

// ReadFrom reads one encoding from r (exactly its bytes, nothing after it)
// and replaces b with it, as UnmarshalBinary does.
func (b *Bloom) ReadFrom(r io.Reader) (int64, error) {
	body, n, err := readEnvelope(kindBloom, r)
	if err != nil {
		return n, err
	}
	return n, b.setFromBody(body)
}

func (b *Bloom) setFromBody(body []byte) error {
	d := newDecoder(kindBloom, body)
	nb := decodeBloomBody(d)
	if err := d.finish(); err != nil {
		return err
	}
	*b = *nb
	return nil
}
