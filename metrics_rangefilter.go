package bloomkv

// RangeFilterMetrics count what range filters did for bounded seeks
// (Options.RangeFilterBitsPerKey), per level in LevelMetrics and summed
// in Metrics. Measured in the level iterators where the tables are
// skipped or read.
type RangeFilterMetrics struct {
	// Probes counts the tables whose range filter a bounded seek asked.
	Probes uint64
	// Negatives counts those skipped: the filter said the range was
	// empty, and no index or data block of the table was read.
	Negatives uint64
	// FalsePositives counts tables the filter let through that held no
	// entry in the range (the seek read a block for nothing).
	FalsePositives uint64
}

func (a RangeFilterMetrics) sub(b RangeFilterMetrics) RangeFilterMetrics {
	return RangeFilterMetrics{a.Probes - b.Probes, a.Negatives - b.Negatives, a.FalsePositives - b.FalsePositives}
}

func (a *RangeFilterMetrics) add(b RangeFilterMetrics) {
	a.Probes += b.Probes
	a.Negatives += b.Negatives
	a.FalsePositives += b.FalsePositives
}

// FPR returns FalsePositives / (FalsePositives + Negatives): of the
// tables that held nothing in range (as far as the filter was asked),
// the share it let through. 0 without any.
func (a RangeFilterMetrics) FPR() float64 {
	if a.FalsePositives+a.Negatives == 0 {
		return 0
	}
	return float64(a.FalsePositives) / float64(a.FalsePositives+a.Negatives)
}

// rangeFilterMetrics fills m's range-filter counters from the read shards.
func (db *DB) rangeFilterMetrics(m *Metrics) {
	for l := range m.Levels {
		var lm RangeFilterMetrics
		for i := range db.reads {
			is := &db.reads[i].iterLevels[l]
			lm.Probes += is.RangeFilterProbes.Load()
			lm.Negatives += is.RangeFilterNegatives.Load()
			lm.FalsePositives += is.RangeFilterFalsePositives.Load()
		}
		m.Levels[l].RangeFilter = lm
		m.RangeFilter.add(lm)
	}
}
