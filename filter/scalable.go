package filter

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Defaults of NewScalable, those of RedisBloom's BF.RESERVE with EXPANSION 2.
const (
	DefaultGrowth     = 2.0
	DefaultTightening = 0.5
	// maxGrowth bounds the growth factor; beyond it a second layer would
	// already dwarf any first.
	maxGrowth = 1 << 16
	// minLayerFPR keeps a layer's target rate positive however many layers
	// a growth of 1 stacks up.
	minLayerFPR = 1e-300
	// layerMargin: each layer is sized for this fraction of its share of the
	// rate. The bound fpp/(1 - r) is the sum of every layer's share, which
	// the first few layers already approach, so a layer may not exceed its
	// share at all; but double hashing runs about 1% above the textbook
	// rate, and small layers scatter around it by several percent. Sizing
	// for 90% of the share keeps the compound rate below the bound at a cost
	// of about 2% more bits at 1% (ln 0.9 / ln 0.01).
	layerMargin = 0.9
)

// Scalable is a scalable bloom filter (Almeida et al., 2007) for when the
// number of keys is not known in advance: a stack of Blooms. The first
// layer is sized for n keys at rate fpp; when the newest layer has taken
// as many keys as it was sized for, a layer growth times larger, with a
// target rate tightening times lower, is added. Layer i thus holds
// n*growth^i keys at fpp*tightening^i, and the compound false-positive rate
// stays below fpp/(1 - tightening) (FPRBound) however many keys arrive:
// 2*fpp with the defaults. Pass fpp*(1 - tightening) to stay below fpp.
//
// Add counts a key into a layer only when no layer may already hold it, as
// RedisBloom does, so Added never counts a key twice, but misses every new
// key that was a false positive (3% of 100,000 keys at fpp 0.01). Count
// adds its estimate of those, and so tracks the distinct keys added.
//
// All methods are safe for concurrent use. MayContain takes no lock; Add
// and the methods that read counts take a mutex. UnmarshalBinary and
// ReadFrom replace the filter and must not run alongside other calls.
//
// The zero Scalable is a placeholder to decode into (UnmarshalBinary,
// ReadFrom, UnmarshalJSON, LoadChunks); build filters with NewScalable. Any
// other use of a zero one panics with ErrZeroFilter, and encoding one
// returns it.
type Scalable struct {
	cfg scalableConfig // constant after construction

	mu sync.Mutex // serializes changes: Add, Reset
	// layers holds the current stack, oldest first. Readers load it without
	// mu; a writer holding mu replaces it with a longer copy to add a layer.
	layers atomic.Pointer[[]*scalableLayer]
	// Guarded by mu: the estimate of new keys Add turned away as false
	// positives (scalable_count.go).
	est missEstimate
}

type scalableConfig struct {
	initial    int     // keys the first layer is sized for
	fpp        float64 // the first layer's target rate
	growth     float64 // capacity ratio of successive layers, >= 1
	tightening float64 // rate ratio of successive layers, in (0, 1)
}

type scalableLayer struct {
	bloom    *Bloom
	capacity int // keys the layer was sized for; constant
	count    int // keys counted into the layer; guarded by Scalable.mu
}

// ScalableOption sets an optional parameter of NewScalable.
type ScalableOption func(*scalableConfig)

// WithGrowth sets the factor by which each new layer's capacity exceeds the
// previous one's (default 2, at least 1). Larger factors mean fewer layers,
// so faster lookups, at the cost of memory that grows in bigger steps.
func WithGrowth(growth float64) ScalableOption {
	return func(c *scalableConfig) { c.growth = growth }
}

// WithTightening sets the ratio r by which each new layer's target
// false-positive rate is lower than the previous one's (default 0.5, in
// (0, 1)). The compound rate stays below fpp/(1 - r); a smaller r keeps it
// closer to fpp but makes later layers larger.
func WithTightening(r float64) ScalableOption {
	return func(c *scalableConfig) { c.tightening = r }
}

// NewScalable returns a scalable bloom filter whose first layer is sized for
// n keys at rate fpp. It fails, wrapping ErrInvalidArgument, for n < 0, fpp
// outside (0, 1), growth outside [1, 65536] or tightening outside (0, 1).
func NewScalable(n int, fpp float64, opts ...ScalableOption) (*Scalable, error) {
	if err := checkSizing("scalable", n, fpp); err != nil {
		return nil, err
	}
	cfg := scalableConfig{initial: max(n, 1), fpp: fpp, growth: DefaultGrowth, tightening: DefaultTightening}
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, invalidArgf("scalable: %v", err)
	}
	first, err := cfg.newLayer(0)
	if err != nil {
		return nil, err
	}
	s := &Scalable{cfg: cfg, est: newMissEstimate()}
	s.layers.Store(&[]*scalableLayer{first})
	return s, nil
}

func (c scalableConfig) validate() error {
	switch {
	case !(c.growth >= 1 && c.growth <= maxGrowth):
		return fmt.Errorf("growth %v is outside [1, %d]", c.growth, maxGrowth)
	case !(c.tightening > 0 && c.tightening < 1):
		return fmt.Errorf("tightening ratio %v is outside (0, 1)", c.tightening)
	}
	return nil
}

// newLayer returns an empty layer i, shaped by layerShape.
func (c scalableConfig) newLayer(i int) (*scalableLayer, error) {
	capacity, m, k, err := c.layerShape(i)
	if err != nil {
		return nil, err
	}
	return &scalableLayer{bloom: newBloom(m, k), capacity: capacity}, nil
}

// layerShape sizes layer i: n*growth^i keys at rate fpp*tightening^i (less
// layerMargin). Past
// about 1e-9 a layer's rate is limited by MaxProbes and comes out slightly
// above its target; that takes some thirty layers to reach.
func (c scalableConfig) layerShape(i int) (capacity int, m uint64, k int, err error) {
	keys := math.Ceil(float64(c.initial) * math.Pow(c.growth, float64(i)))
	if keys > maxBloomBits { // also keeps int(keys) below from overflowing
		return 0, 0, 0, invalidArgf("scalable: layer %d would hold %v keys", i, keys)
	}
	fpr := max(layerMargin*c.fpp*math.Pow(c.tightening, float64(i)), minLayerFPR)
	m, k, err = bloomShape("scalable", int(keys), fpr)
	return int(keys), m, k, err
}

// Add adds key unless a layer may already hold it, and reports whether it
// added it: true means key was certainly new.
func (s *Scalable) Add(key []byte) bool { return s.AddHash(Hash(key)) }

// AddHash is Add for a key hashed with Hash or HashString.
func (s *Scalable) AddHash(h uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.MayContainHash(h) {
		return false
	}
	layers := *s.loadLayers()
	last := layers[len(layers)-1]
	if last.count >= last.capacity {
		// A layer that cannot be sized (beyond maxBloomBits, unreachable in
		// practice) leaves the newest layer taking keys past its capacity.
		if next, err := s.cfg.newLayer(len(layers)); err == nil {
			grown := append(layers[:len(layers):len(layers)], next)
			s.layers.Store(&grown)
			s.est.freeze(last)
			last = next
		}
	}
	s.est.accepted(last)
	last.bloom.AddHash(h)
	last.count++
	return true
}

// loadLayers returns the layers, panicking on a zero Scalable (which has
// none) with ErrZeroFilter rather than a nil dereference.
func (s *Scalable) loadLayers() *[]*scalableLayer {
	l := s.layers.Load()
	if l == nil {
		panic(ErrZeroFilter)
	}
	return l
}

// MayContain reports whether key may have been added. False is certain.
func (s *Scalable) MayContain(key []byte) bool { return s.MayContainHash(Hash(key)) }

// MayContainHash is MayContain for a key hashed with Hash or HashString.
func (s *Scalable) MayContainHash(h uint64) bool {
	layers := *s.loadLayers()
	// Newest first: with growth >= 2 it holds at least half of the keys.
	for i := len(layers) - 1; i >= 0; i-- {
		if layers[i].bloom.MayContainHash(h) {
			return true
		}
	}
	return false
}

// Count estimates the number of distinct keys added: Added plus the
// expected number of new keys that Add turned away because the filter
// already answered "maybe" for them (see scalable_count.go). Adding a key
// again does not change it.
func (s *Scalable) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addedLocked() + int(math.Round(s.est.missed))
}

// Added returns the number of Adds that returned true: keys certainly new
// when added. It is at most the number of distinct keys added.
func (s *Scalable) Added() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addedLocked()
}

func (s *Scalable) addedLocked() int {
	n := 0
	for _, l := range *s.layers.Load() {
		n += l.count
	}
	return n
}

// Capacity returns the keys the current layers were sized for; the next
// Add past it adds a layer.
func (s *Scalable) Capacity() int {
	n := 0
	for _, l := range *s.layers.Load() {
		n += l.capacity
	}
	return n
}

// Layers returns the number of layers.
func (s *Scalable) Layers() int { return len(*s.layers.Load()) }

// SizeBytes returns the memory all layers' bit arrays occupy.
func (s *Scalable) SizeBytes() int {
	n := 0
	for _, l := range *s.layers.Load() {
		n += l.bloom.SizeBytes()
	}
	return n
}

// FPRBound returns fpp/(1 - tightening), the rate the compound
// false-positive rate stays below however many keys are added.
func (s *Scalable) FPRBound() float64 { return s.cfg.fpp / (1 - s.cfg.tightening) }

// EstimatedFPR returns the compound false-positive rate at the current
// fills, 1 - Π(1 - FPR_i): a key is a false positive if any layer says so.
// It reads every layer: O(total bits / 64).
func (s *Scalable) EstimatedFPR() float64 {
	miss := 1.0
	for _, l := range *s.layers.Load() {
		miss *= 1 - l.bloom.EstimatedFPR()
	}
	return 1 - miss
}

// Reset removes every key and every layer but a fresh first one.
func (s *Scalable) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, _ := s.cfg.newLayer(0) // sized successfully at construction
	s.layers.Store(&[]*scalableLayer{first})
	s.est = newMissEstimate()
}

func (s *Scalable) String() string {
	return fmt.Sprintf("scalable(%d layers, capacity %d, %d bytes, fpp %v, growth %v, tightening %v)",
		s.Layers(), s.Capacity(), s.SizeBytes(), s.cfg.fpp, s.cfg.growth, s.cfg.tightening)
}
