package filter

import (
	"io"
	"math"
)

// Counting body (kind 2), inside the envelope described in encoding.go:
//
//	offset  size    field
//	0       8       m, counters: a positive multiple of 64, at most 2^46 (on
//	                32-bit platforms at most 2^31-1: see maxBloomBits)
//	8       4       k, probes: 1..30
//	12      4       reserved, zero
//	16      8       count: Adds minus Removes, at most 2^63-1 (on 32-bit
//	                platforms at most 2^31-1, the largest int)
//	24      m/2     counters as m/16 uint64 words; counter i is bits
//	                4*(i%16) .. 4*(i%16)+3 of word i/16
const countingBodyFixed = 24

func (c *Counting) bodyLen() uint64 { return countingBodyFixed + c.m/2 }

// encodeBody requires c.mu held (at least for reading).
func (c *Counting) encodeBody(e *encoder) {
	e.u64(c.m)
	e.u32(uint32(c.k))
	e.u32(0)
	e.u64(uint64(c.count))
	e.words(c.counters)
}

// MarshalBinary encodes c in the versioned, checksummed format above.
func (c *Counting) MarshalBinary() ([]byte, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.m == 0 {
		return nil, ErrZeroFilter
	}
	return marshal(kindCounting, c), nil
}

// UnmarshalBinary replaces c with the filter encoded in data. Damaged or
// foreign input yields an error wrapping ErrCorruption and leaves c as it
// was.
func (c *Counting) UnmarshalBinary(data []byte) error {
	body, err := openEnvelope(kindCounting, data)
	if err != nil {
		return err
	}
	return c.setFromBody(body)
}

// WriteTo writes c's encoding to w and returns the bytes written.
func (c *Counting) WriteTo(w io.Writer) (int64, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.m == 0 {
		return 0, ErrZeroFilter
	}
	return writeEnvelope(w, kindCounting, c)
}

// ReadFrom reads one encoding from r and replaces c with it, as
// UnmarshalBinary does.
func (c *Counting) ReadFrom(r io.Reader) (int64, error) {
	body, n, err := readEnvelope(kindCounting, r)
	if err != nil {
		return n, err
	}
	return n, c.setFromBody(body)
}

func (c *Counting) setFromBody(body []byte) error {
	d := newDecoder(kindCounting, body)
	at := d.off
	m := d.u64("counter count")
	d.check(m > 0 && m%64 == 0 && m <= maxBloomBits, at, "counter count %d is not a positive multiple of 64 up to %d", m, uint64(maxBloomBits))
	at = d.off
	k := d.u32("probe count")
	d.check(k >= 1 && k <= MaxProbes, at, "probe count %d is outside [1, %d]", k, MaxProbes)
	d.zero32("reserved field")
	at = d.off
	count := d.u64("key count")
	d.check(count <= math.MaxInt, at, "key count %d exceeds %d", count, math.MaxInt)
	counters := d.words(m/16, "counters")
	if err := d.finish(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.k, c.counters, c.count = m, int(k), counters, int(count)
	return nil
}
