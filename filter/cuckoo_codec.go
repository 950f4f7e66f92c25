package filter

import (
	"io"
)

// Cuckoo body (kind 3), inside the envelope described in encoding.go:
//
//	offset  size    field
//	0       8       buckets: at least 1; buckets*4*f at most 2^46 (on
//	                32-bit platforms at most 2^31-1: see maxBloomBits)
//	8       4       f, fingerprint bits: 4..32
//	12      4       reserved, zero
//	16      8       count: fingerprints stored, = non-zero slots
//	24      W*8     slots: buckets*4 fingerprints of f bits packed back to
//	                back, slot s at bits [s*f, (s+1)*f) of the bit array
//	                held as W = ceil(buckets*4*f/64) uint64 words (bit i is
//	                bit i%64 of word i/64); bits past the last slot are zero
const cuckooBodyFixed = 24

func (c *Cuckoo) bodyLen() uint64 { return cuckooBodyFixed + uint64(len(c.table.words))*8 }

// encodeBody requires c.mu held (at least for reading).
func (c *Cuckoo) encodeBody(e *encoder) {
	e.u64(c.buckets)
	e.u32(uint32(c.fpBits))
	e.u32(0)
	e.u64(uint64(c.count))
	e.words(c.table.words)
}

// MarshalBinary encodes c in the versioned, checksummed format above.
func (c *Cuckoo) MarshalBinary() ([]byte, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.buckets == 0 {
		return nil, ErrZeroFilter
	}
	return marshal(kindCuckoo, c), nil
}

// UnmarshalBinary replaces c with the filter encoded in data. Damaged or
// foreign input yields an error wrapping ErrCorruption and leaves c as it
// was.
func (c *Cuckoo) UnmarshalBinary(data []byte) error {
	body, err := openEnvelope(kindCuckoo, data)
	if err != nil {
		return err
	}
	return c.setFromBody(body)
}

// WriteTo writes c's encoding to w and returns the bytes written.
func (c *Cuckoo) WriteTo(w io.Writer) (int64, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.buckets == 0 {
		return 0, ErrZeroFilter
	}
	return writeEnvelope(w, kindCuckoo, c)
}

// ReadFrom reads one encoding from r and replaces c with it, as
// UnmarshalBinary does.
func (c *Cuckoo) ReadFrom(r io.Reader) (int64, error) {
	body, n, err := readEnvelope(kindCuckoo, r)
	if err != nil {
		return n, err
	}
	return n, c.setFromBody(body)
}

func (c *Cuckoo) setFromBody(body []byte) error {
	d := newDecoder(kindCuckoo, body)
	at := d.off
	buckets := d.u64("bucket count")
	d.check(buckets >= 1 && buckets <= maxBloomBits/(bucketSlots*minFingerprintBits), at, "bucket count %d is outside [1, %d]", buckets, uint64(maxBloomBits/(bucketSlots*minFingerprintBits)))
	at = d.off
	f := uint64(d.u32("fingerprint bits"))
	d.check(f >= minFingerprintBits && f <= maxFingerprintBits, at, "fingerprint bits %d outside [%d, %d]", f, minFingerprintBits, maxFingerprintBits)
	if d.err == nil {
		d.check(buckets*bucketSlots*f <= maxBloomBits, at-8, "%d buckets of %d-bit fingerprints exceed %d bits", buckets, f, uint64(maxBloomBits))
	}
	d.zero32("reserved field")
	countAt := d.off
	count := d.u64("fingerprint count")
	slotsAt := d.off
	words := d.words(slotWords(buckets*bucketSlots, f), "slots")
	if err := d.finish(); err != nil {
		return err
	}
	nc := newCuckoo(0, f) // the table is replaced below
	nc.buckets = buckets
	nc.table.words = words
	nonzero := uint64(0)
	for s := uint64(0); s < buckets*bucketSlots; s++ {
		if nc.table.get(s) != 0 {
			nonzero++
		}
	}
	d.check(nonzero == count, countAt, "fingerprint count %d, but %d slots are filled", count, nonzero)
	if used := buckets * bucketSlots * f % 64; used != 0 && d.err == nil {
		last := len(words) - 1
		d.check(words[last]>>used == 0, slotsAt+last*8, "bits past the last slot are not zero")
	}
	if d.err != nil {
		return d.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buckets, c.fpBits, c.table, c.count = buckets, f, nc.table, int(count)
	c.rng = nc.rng ^ buckets
	c.path = nil
	return nil
}
