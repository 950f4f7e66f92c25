package filter

import (
	"math/bits"
)

// kindRange is the envelope kind of a RangeFilter (encoding.go).
const kindRange filterKind = 6

// RangeFilter body (kind 6), inside the envelope described in encoding.go
// (so: magic, version, kind, length, and a CRC-32C over everything):
//
//	offset  size   field
//	0       8      n, distinct keys: at most 2^30
//	8       8      r, hash range: 2 <= r < 2^62
//	16      8      seed of the block hash; must be rangeSeed(n, r)
//	24      1      logL: blocks of 2^logL integers; must be bitlen(r) - 2
//	25      1      lowBits, Elias-Fano low part; must be bitlen(r/max(n,1)) - 1
//	                (0 when n = 0)
//	26      2      reserved, zero
//	28      4      p, prefix length: at most 65536
//	32      p      prefix stripped from byte keys before RangeKey
//	32+p    8*lw   low parts: n values of lowBits bits packed into
//	               lw = ceil(n*lowBits/64) uint64 words, value i at bit
//	               i*lowBits (bit j of word j/64 at j%64); unused bits zero
//	...     8*hw   high parts in unary: hw = ceil(H/64) words, H = n +
//	               ((r-1) >> lowBits) + 1 bits; value i sets bit
//	               (v_i >> lowBits) + i; exactly n bits set, unused bits zero
//
// Values are the sorted hashes h(x) = (q(x >> logL) + x mod r) mod r with
// q(b) = rangeMix(b ^ seed) mod r, every one below r. The fields that
// derive from (n, r) are stored so that the block describes itself, and
// checked, so that the encoding of a filter is unique.
//
// Worked example (pinned by TestRangeFilterGoldenEncoding): keys 1, 5 and
// 1000 at 4 bits per key (r = 3 * 2^2 * 1 = 12, logL = 2, lowBits = 2) encode
// as
//
//	42 4b 56 46 01 06 00 00  30 00 00 00 00 00 00 00   "BKVF", v1, range, L=48
//	03 00 00 00 00 00 00 00  0c 00 00 00 00 00 00 00   n=3, r=12
//	ce 34 9f 70 70 38 98 d4  02 02 00 00 00 00 00 00   seed, logL, lowBits, p=0
//	10 00 00 00 00 00 00 00  19 00 00 00 00 00 00 00   low word, high word
//	cf 5f a0 09                                        CRC-32C
//
// The keys hash to 8, 0 and 9; sorted 0, 8, 9 have low parts 0, 0, 1
// (bits 0-1, 2-3, 4-5 of the low word: 0x10) and high parts 0, 2, 2, set
// at bits 0+0, 2+1, 2+2 of the high word (0x19).
const rangeBodyFixed = 32

func (f *RangeFilter) bodyLen() uint64 {
	return rangeBodyFixed + uint64(len(f.prefix)) + 8*uint64(len(f.low)+len(f.high))
}

func (f *RangeFilter) encodeBody(e *encoder) {
	e.u64(f.n)
	e.u64(f.r)
	e.u64(f.seed)
	e.u8(f.logL)
	e.u8(f.lowBits)
	e.u16(0)
	e.u32(uint32(len(f.prefix)))
	e.bytes(f.prefix)
	e.words(f.low)
	e.words(f.high)
}

// MarshalBinary encodes f in the versioned, checksummed format above.
func (f *RangeFilter) MarshalBinary() ([]byte, error) {
	if f.r == 0 {
		return nil, ErrZeroFilter
	}
	return marshal(kindRange, f), nil
}

// AppendBinary appends f's encoding to dst.
func (f *RangeFilter) AppendBinary(dst []byte) []byte {
	b, _ := f.MarshalBinary()
	return append(dst, b...)
}

// UnmarshalBinary replaces f with the filter encoded in data. Damaged or
// foreign input yields an error wrapping ErrCorruption (never a panic) and
// leaves f as it was. The decoded filter does not alias data.
func (f *RangeFilter) UnmarshalBinary(data []byte) error {
	nf, err := DecodeRangeFilter(data)
	if err != nil {
		return err
	}
	*f = *nf
	return nil
}

// DecodeRangeFilter decodes a RangeFilter encoding (MarshalBinary).
func DecodeRangeFilter(data []byte) (*RangeFilter, error) {
	body, err := openEnvelope(kindRange, data)
	if err != nil {
		return nil, err
	}
	d := newDecoder(kindRange, body)
	f := &RangeFilter{}
	at := d.off
	f.n = d.u64("key count")
	d.check(f.n <= maxRangeFilterKeys, at, "key count %d exceeds %d", f.n, maxRangeFilterKeys)
	at = d.off
	f.r = d.u64("hash range")
	d.check(f.r >= 2 && f.r < 1<<62, at, "hash range %d outside [2, 2^62)", f.r)
	at = d.off
	f.seed = d.u64("seed")
	d.check(f.seed == rangeSeed(f.n, f.r), at, "seed %#x is not the one of n=%d, r=%d", f.seed, f.n, f.r)
	if d.err != nil {
		return nil, d.err
	}
	at = d.off
	hdr := d.take(4, "shape bytes")
	if hdr == nil {
		return nil, d.err
	}
	f.logL, f.lowBits = hdr[0], hdr[1]
	wantLowBits := uint8(bits.Len64(f.r/max(f.n, 1)) - 1)
	if f.n == 0 {
		wantLowBits = 0
	}
	d.check(f.logL == uint8(bits.Len64(f.r)-2), at, "block width log %d, want %d for r=%d", f.logL, bits.Len64(f.r)-2, f.r)
	d.check(f.lowBits == wantLowBits, at+1, "low bits %d, want %d for n=%d, r=%d", f.lowBits, wantLowBits, f.n, f.r)
	d.check(hdr[2] == 0 && hdr[3] == 0, at+2, "reserved bytes are not zero")
	at = d.off
	p := d.u32("prefix length")
	d.check(p <= maxRangePrefix, at, "prefix of %d bytes exceeds %d", p, maxRangePrefix)
	if d.err != nil {
		return nil, d.err
	}
	if pb := d.take(int(p), "prefix"); pb != nil {
		f.prefix = append([]byte{}, pb...)
	}
	lowWords := (f.n*uint64(f.lowBits) + 63) / 64
	f.low = d.words(lowWords, "low parts")
	f.highBits = f.n + (f.r-1)>>f.lowBits + 1
	at = d.off
	f.high = d.words((f.highBits+63)/64, "high parts")
	if err := d.finish(); err != nil {
		return nil, err
	}
	if used := f.n * uint64(f.lowBits) % 64; used != 0 && f.low[len(f.low)-1]>>used != 0 {
		d.failAtf(at-8, "unused bits of the last low word are not zero")
	}
	var ones uint64
	for _, w := range f.high {
		ones += uint64(bits.OnesCount64(w))
	}
	if used := f.highBits % 64; used != 0 && f.high[len(f.high)-1]>>used != 0 {
		d.failAtf(d.off-8, "unused bits of the last high word are not zero")
	}
	d.check(ones == f.n, at, "high parts hold %d values, want %d", ones, f.n)
	if d.err != nil {
		return nil, d.err
	}
	if f.n > 0 {
		// Every value below r: the last (largest) one is enough.
		last := uint64(0)
		for w := len(f.high) - 1; w >= 0; w-- {
			if f.high[w] != 0 {
				last = uint64(w)*64 + uint64(63-bits.LeadingZeros64(f.high[w]))
				break
			}
		}
		if v := (last-(f.n-1))<<f.lowBits | f.getLow(f.n-1); v >= f.r {
			d.failAtf(at, "largest value %d is not below the hash range %d", v, f.r)
			return nil, d.err
		}
	}
	f.buildSamples()
	return f, nil
}
