package filter

import (
	"io"
)

// Cuckoo bodies, inside the envelope described in encoding.go. A filter of
// buckets of 4 slots without expansion (what NewCuckoo gives without
// options) is written as kind 3, the layout every version reads:
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
//
// Any other filter (WithBucketSize, WithExpansion) is written as kind 5:
//
//	offset  size    field
//	0       4       b, slots per bucket: 2..16
//	4       4       f, fingerprint bits: 4..32
//	8       4       expansion: 0..1024
//	12      4       table count T: at least 1, and 1 when expansion is 0
//	16      ...     T tables, oldest first, each: buckets (uint64; table i
//	                has buckets_0 * expansion^i), count (uint64, = non-zero
//	                slots), then its slots as in kind 3 with b per bucket
//
// Every table's slots together hold at most 2^46 bits (2^31-1 on 32-bit
// platforms), so sizes are tied to the bytes present.
const (
	cuckooBodyFixed      = 24
	cuckooGrownBodyFixed = 16
	cuckooTableHeader    = 16
)

// classic reports whether c is written as kind 3. Requires c.mu held.
func (c *Cuckoo) classic() bool {
	return c.cfg.slots == defaultBucketSize && c.cfg.expansion == 0 && len(c.tables) == 1
}

func (c *Cuckoo) kind() filterKind {
	if c.classic() {
		return kindCuckoo
	}
	return kindCuckooGrown
}

func (c *Cuckoo) bodyLen() uint64 {
	if c.classic() {
		return cuckooBodyFixed + uint64(len(c.tables[0].table.words))*8
	}
	n := uint64(cuckooGrownBodyFixed)
	for _, t := range c.tables {
		n += cuckooTableHeader + uint64(len(t.table.words))*8
	}
	return n
}

// encodeBody requires c.mu held (at least for reading).
func (c *Cuckoo) encodeBody(e *encoder) {
	if c.classic() {
		t := c.tables[0]
		e.u64(t.buckets)
		e.u32(uint32(c.cfg.fpBits))
		e.u32(0)
		e.u64(uint64(t.count))
		e.words(t.table.words)
		return
	}
	e.u32(uint32(c.cfg.slots))
	e.u32(uint32(c.cfg.fpBits))
	e.u32(uint32(c.cfg.expansion))
	e.u32(uint32(len(c.tables)))
	for _, t := range c.tables {
		e.u64(t.buckets)
		e.u64(uint64(t.count))
		e.words(t.table.words)
	}
}

// MarshalBinary encodes c in the versioned, checksummed format above.
func (c *Cuckoo) MarshalBinary() ([]byte, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.tables == nil {
		return nil, ErrZeroFilter
	}
	return marshal(c.kind(), c), nil
}

// UnmarshalBinary replaces c with the filter encoded in data. Damaged or
// foreign input yields an error wrapping ErrCorruption and leaves c as it
// was.
func (c *Cuckoo) UnmarshalBinary(data []byte) error {
	kind, body, err := openEnvelopeOf(data, kindCuckoo, kindCuckooGrown)
	if err != nil {
		return err
	}
	return c.setFromBody(kind, body)
}

// WriteTo writes c's encoding to w and returns the bytes written.
func (c *Cuckoo) WriteTo(w io.Writer) (int64, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.tables == nil {
		return 0, ErrZeroFilter
	}
	return writeEnvelope(w, c.kind(), c)
}

// ReadFrom reads one encoding from r and replaces c with it, as
// UnmarshalBinary does.
func (c *Cuckoo) ReadFrom(r io.Reader) (int64, error) {
	kind, body, n, err := readEnvelopeOf(r, kindCuckoo, kindCuckooGrown)
	if err != nil {
		return n, err
	}
	return n, c.setFromBody(kind, body)
}

func (c *Cuckoo) setFromBody(kind filterKind, body []byte) error {
	d := newDecoder(kind, body)
	var cfg cuckooConfig
	var tables []*cuckooTable
	if kind == kindCuckoo {
		cfg.slots = defaultBucketSize
		at := d.off
		buckets := d.u64("bucket count")
		d.check(buckets >= 1 && buckets <= maxBloomBits/(bucketSlots*minFingerprintBits), at, "bucket count %d is outside [1, %d]", buckets, uint64(maxBloomBits/(bucketSlots*minFingerprintBits)))
		cfg.fpBits = decodeFingerprintBits(d)
		if d.err == nil {
			d.check(buckets*bucketSlots*cfg.fpBits <= maxBloomBits, at, "%d buckets of %d-bit fingerprints exceed %d bits", buckets, cfg.fpBits, uint64(maxBloomBits))
		}
		d.zero32("reserved field")
		if t := decodeCuckooTable(d, cfg, buckets, 1, 0); t != nil {
			tables = append(tables, t)
		}
	} else {
		at := d.off
		cfg.slots = uint64(d.u32("bucket size"))
		d.check(cfg.slots >= minBucketSize && cfg.slots <= maxBucketSize, at, "bucket size %d is outside [%d, %d]", cfg.slots, minBucketSize, maxBucketSize)
		cfg.fpBits = decodeFingerprintBits(d)
		at = d.off
		cfg.expansion = uint64(d.u32("expansion"))
		d.check(cfg.expansion <= maxExpansion, at, "expansion %d is above %d", cfg.expansion, maxExpansion)
		at = d.off
		n := d.u32("table count")
		d.check(n >= 1 && (cfg.expansion > 0 || n == 1), at, "table count %d with expansion %d", n, cfg.expansion)
		bits := uint64(0)
		var first uint64
		spread := uint64(1)
		for i := uint32(0); d.err == nil && i < n; i++ {
			at = d.off
			buckets := d.u64("bucket count")
			if i == 0 {
				first = buckets
				d.check(buckets >= 1 && buckets <= maxBloomBits, at, "table 0: bucket count %d is outside [1, %d]", buckets, uint64(maxBloomBits))
			} else {
				want := tables[i-1].buckets * cfg.expansion
				d.check(buckets == want, at, "table %d has %d buckets; table 0's %d and expansion %d give %d", i, buckets, first, cfg.expansion, want)
			}
			if d.err == nil {
				bits += buckets * cfg.slots * cfg.fpBits
				d.check(bits <= maxBloomBits && buckets <= maxBloomBits, at, "tables 0..%d hold more than %d bits", i, uint64(maxBloomBits))
			}
			if t := decodeCuckooTable(d, cfg, first, spread, int(i)); t != nil {
				tables = append(tables, t)
			}
			spread *= max(cfg.expansion, 1)
		}
	}
	if err := d.finish(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg, c.tables = cfg, tables
	c.rng = 0x9e3779b97f4a7c15 ^ tables[0].buckets
	c.path = nil
	return nil
}

func decodeFingerprintBits(d *decoder) uint64 {
	at := d.off
	f := uint64(d.u32("fingerprint bits"))
	d.check(f >= minFingerprintBits && f <= maxFingerprintBits, at, "fingerprint bits %d outside [%d, %d]", f, minFingerprintBits, maxFingerprintBits)
	return f
}

// decodeCuckooTable reads a table's count and slots (after its bucket
// count, read by the caller, which checked it) and checks that the count
// is the number of filled slots and that bits past the last slot are zero.
func decodeCuckooTable(d *decoder, cfg cuckooConfig, base, spread uint64, i int) *cuckooTable {
	if d.err != nil {
		return nil
	}
	buckets := base * spread
	countAt := d.off
	count := d.u64("fingerprint count")
	slotsAt := d.off
	slots := buckets * cfg.slots
	words := d.words(slotWords(slots, cfg.fpBits), "slots")
	if d.err != nil {
		return nil
	}
	t := &cuckooTable{buckets: buckets, base: base, spread: spread, slots: cfg.slots,
		table: slotTable{words: words, f: cfg.fpBits, mask: 1<<cfg.fpBits - 1}}
	nonzero := uint64(0)
	for s := uint64(0); s < slots; s++ {
		if t.table.get(s) != 0 {
			nonzero++
		}
	}
	d.check(nonzero == count, countAt, "table %d: fingerprint count %d, but %d slots are filled", i, count, nonzero)
	if used := slots * cfg.fpBits % 64; used != 0 && d.err == nil {
		last := len(words) - 1
		d.check(words[last]>>used == 0, slotsAt+last*8, "table %d: bits past the last slot are not zero", i)
	}
	t.count = int(count)
	return t
}
