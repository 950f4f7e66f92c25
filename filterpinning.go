package bloomkv

// FilterPinning says which tables keep their filter block pinned in
// memory when Options.CacheFilterBlocks puts filters in the block cache.
// A pinned filter is charged to the cache but never evicted; it is held
// until its table is closed (deleted, or closed by the table cache to stay
// within MaxOpenFiles). A table pinned while in level 0 stays pinned if a
// trivial move takes it deeper.
type FilterPinning int

const (
	// PinLevel0Filters pins the filters of level-0 tables: every Get probes
	// each of them, so evicting one costs the most. The default.
	PinLevel0Filters FilterPinning = iota
	// PinAllFilters pins every table's filter once probed: filter memory
	// is accounted in the block cache but not bounded by it.
	PinAllFilters
	// PinNoFilters pins none: every filter competes with data blocks.
	PinNoFilters
)

// String names the setting as the Options field documents it.
func (p FilterPinning) String() string {
	switch p {
	case PinLevel0Filters:
		return "level 0"
	case PinAllFilters:
		return "all"
	case PinNoFilters:
		return "none"
	}
	return "unknown"
}

// pinsFilter reports whether a table probed in level keeps its filter
// pinned under the Options.
func (o *Options) pinsFilter(level int) bool {
	if !o.CacheFilterBlocks {
		return false
	}
	switch o.FilterPinning {
	case PinAllFilters:
		return true
	case PinLevel0Filters:
		return level == 0
	}
	return false
}
