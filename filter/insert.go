package filter

import "errors"

// ErrNoFilter is what Insert returns, with InsertOptions.NoCreate, when
// there is no filter to insert into.
var ErrNoFilter = errors.New("bloomkv/filter: no filter to insert into")

// InsertOptions are the settings of Insert, after RedisBloom's BF.INSERT:
// the shape of the filter it creates when there is none, or NoCreate.
type InsertOptions struct {
	// Capacity is the keys the first layer is sized for (default 100).
	Capacity int
	// ErrorRate is the first layer's false-positive rate (default 0.01).
	ErrorRate float64
	// Expansion is the growth of each new layer (default DefaultGrowth).
	Expansion float64
	// NoCreate makes Insert fail with ErrNoFilter instead of creating one.
	NoCreate bool
}

// Insert adds keys to f, first creating f per o when it is nil (unless
// o.NoCreate), and returns the filter and, for each key, whether it was
// new (what Add returned). The options only shape a filter Insert creates;
// an existing f keeps its own. It fails, wrapping ErrInvalidArgument, for
// options NewScalable refuses, and adds nothing then.
func Insert(f *Scalable, o InsertOptions, keys ...[]byte) (*Scalable, []bool, error) {
	if f == nil {
		if o.NoCreate {
			return nil, nil, ErrNoFilter
		}
		var err error
		if f, err = NewScalable(orDefault(o.Capacity, 100), orDefault(o.ErrorRate, 0.01),
			WithGrowth(orDefault(o.Expansion, DefaultGrowth))); err != nil {
			return nil, nil, err
		}
	}
	added := make([]bool, len(keys))
	for i, k := range keys {
		added[i] = f.Add(k)
	}
	return f, added, nil
}

func orDefault[T int | float64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
