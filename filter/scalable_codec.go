package filter

import (
	"io"
	"math"
)

// Scalable body (kind 4), inside the envelope described in encoding.go:
//
//	offset  size    field
//	0       8       fpp: the first layer's rate, float64 in (0, 1)
//	8       8       growth: float64 in [1, 65536]
//	16      8       tightening: float64 in (0, 1)
//	24      8       initial capacity: keys of the first layer, >= 1
//	32      4       layer count L: >= 1
//	36      4       reserved, zero
//	40      ...     L layers, oldest first, each:
//	                  capacity uint64 (>= 1), count uint64, then a Bloom
//	                  body (see bloom_codec.go: m, k, reserved, bit array)
//
// A layer's count is at most its capacity, except in the newest layer
// when no larger layer could be sized, and always at most the bits set in
// the layer's array: Add counts a key only when some probe of it found a
// zero bit there, which it then set. The counts of all layers sum to at
// most math.MaxInt.
//
// Layer i's capacity, m and k must be those the parameters give it (see
// layerShape), within 1 key, 64 bits and 1 probe of rounding.
const scalableBodyFixed = 40

// layerHeader is a layer's capacity and count.
const layerHeader = 16

func (s *Scalable) bodyLen() uint64 {
	n := uint64(scalableBodyFixed)
	for _, l := range *s.layers.Load() {
		n += layerHeader + l.bloom.bodyLen()
	}
	return n
}

// encodeBody requires s.mu held, so counts and layers hold still.
func (s *Scalable) encodeBody(e *encoder) {
	layers := *s.layers.Load()
	e.f64(s.cfg.fpp)
	e.f64(s.cfg.growth)
	e.f64(s.cfg.tightening)
	e.u64(uint64(s.cfg.initial))
	e.u32(uint32(len(layers)))
	e.u32(0)
	for _, l := range layers {
		e.u64(uint64(l.capacity))
		e.u64(uint64(l.count))
		l.bloom.encodeBody(e)
	}
}

// MarshalBinary encodes s in the versioned, checksummed format above.
func (s *Scalable) MarshalBinary() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.layers.Load() == nil {
		return nil, ErrZeroFilter
	}
	return marshal(kindScalable, s), nil
}

// UnmarshalBinary replaces s with the filter encoded in data. Damaged or
// foreign input yields an error wrapping ErrCorruption and leaves s as it
// was.
func (s *Scalable) UnmarshalBinary(data []byte) error {
	body, err := openEnvelope(kindScalable, data)
	if err != nil {
		return err
	}
	return s.setFromBody(body)
}

// WriteTo writes s's encoding to w and returns the bytes written.
func (s *Scalable) WriteTo(w io.Writer) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.layers.Load() == nil {
		return 0, ErrZeroFilter
	}
	return writeEnvelope(w, kindScalable, s)
}

// ReadFrom reads one encoding from r and replaces s with it, as
// UnmarshalBinary does.
func (s *Scalable) ReadFrom(r io.Reader) (int64, error) {
	body, n, err := readEnvelope(kindScalable, r)
	if err != nil {
		return n, err
	}
	return n, s.setFromBody(body)
}

func (s *Scalable) setFromBody(body []byte) error {
	d := newDecoder(kindScalable, body)
	var cfg scalableConfig
	at := d.off
	cfg.fpp = d.f64("fpp")
	d.check(cfg.fpp > 0 && cfg.fpp < 1, at, "fpp %v is outside (0, 1)", cfg.fpp)
	at = d.off
	cfg.growth = d.f64("growth")
	d.check(cfg.growth >= 1 && cfg.growth <= maxGrowth, at, "growth %v is outside [1, %d]", cfg.growth, maxGrowth)
	at = d.off
	cfg.tightening = d.f64("tightening")
	d.check(cfg.tightening > 0 && cfg.tightening < 1, at, "tightening ratio %v is outside (0, 1)", cfg.tightening)
	at = d.off
	initial := d.u64("initial capacity")
	d.check(initial >= 1 && initial <= maxBloomBits, at, "initial capacity %d is outside [1, %d]", initial, uint64(maxBloomBits))
	cfg.initial = int(initial)
	if d.err == nil {
		_, _, _, err := cfg.layerShape(0)
		d.check(err == nil, at, "initial capacity %d at rate %v needs a first layer beyond %d bits", initial, cfg.fpp, uint64(maxBloomBits))
	}
	at = d.off
	numLayers := d.u32("layer count")
	d.check(numLayers >= 1, at, "layer count is zero")
	d.zero32("reserved field")
	var layers []*scalableLayer
	var counts []uint64 // each layer's, checked below
	var countAt []int
	for i := uint32(0); d.err == nil && i < numLayers; i++ {
		at = d.off
		capacity := d.u64("layer capacity")
		count := d.u64("layer count")
		d.check(capacity >= 1 && capacity <= maxBloomBits, at, "layer %d capacity %d is outside [1, %d]", i, capacity, uint64(maxBloomBits))
		newest := i == numLayers-1
		d.check(count <= capacity || newest, at+8, "layer %d counts %d keys, more than its capacity %d", i, count, capacity)
		b := decodeBloomBody(d)
		if d.err != nil {
			break
		}

		// The layer must have the shape the parameters give it (within
		// rounding, so a file stays readable wherever floating point
		// differs in the last place). This ties every size to the bytes
		// present: damaged parameters cannot make a later layer huge.
		wantCap, wantM, wantK, err := cfg.layerShape(int(i))
		d.check(err == nil && near(capacity, uint64(wantCap), 1) && near(b.m, wantM, 64) && near(uint64(b.k), uint64(wantK), 1),
			at, "layer %d holds capacity %d, m=%d, k=%d; the parameters give %d, %d, %d", i, capacity, b.m, b.k, wantCap, wantM, wantK)
		layers = append(layers, &scalableLayer{bloom: b, capacity: int(capacity)})
		counts = append(counts, count)
		countAt = append(countAt, at+8)
	}
	// The counts are checked against the bits once the layout is known to
	// be whole, so that a cut or shifted body is reported where it breaks.
	// The newest layer's count once had no bound but MaxInt, and a forged
	// one decoded to a negative Added().
	total := uint64(0)
	for i := 0; d.err == nil && i < len(layers); i++ {
		count, set := counts[i], layers[i].bloom.BitsSet()
		d.check(count <= set, countAt[i], "layer %d counts %d keys, more than the %d bits set in it", i, count, set)
		d.check(count <= math.MaxInt-total, countAt[i], "layer %d count %d takes the total past %d", i, count, math.MaxInt)
		total += count
		layers[i].count = int(count)
	}
	if err := d.finish(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = cfg
	s.layers.Store(&layers)
	s.est = replayMissEstimate(layers)
	return nil
}

func near(a, b, tolerance uint64) bool { return max(a, b)-min(a, b) <= tolerance }
