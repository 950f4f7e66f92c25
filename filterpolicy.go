package bloomkv

import (
	"math"
	"slices"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// The filter policy decides the bits per key of each table the engine
// writes: Options' uniform setting (filterBitsPerKey), or with
// FilterPerLevel a per-level choice (filter.AllocateBits, Monkey) at the
// same total memory, and with FilterSkipLastLevel none in the last level.
// It is decided when a table is started, from the live tree; tables keep
// what they were written with, and compactions converge the tree.

// maxPolicyBits caps the bits per key the per-level policy gives a run: at
// 32 bits a bloom's rate is 2e-7, and small level-0 tables would
// otherwise ask for more than a filter block allows.
const maxPolicyBits = 32

// lastLevel returns the deepest level of v holding a table (0 if none).
func lastLevel(v *manifest.Version) int {
	for l := manifest.NumLevels - 1; l > 0; l-- {
		if len(v.Levels[l]) > 0 {
			return l
		}
	}
	return 0
}

// isLastLevel reports whether a table written to level would be in the
// tree's last level: level 1 or deeper, with nothing below it. Level 0 is
// never the last level (flushes keep their filters).
func isLastLevel(v *manifest.Version, level int) bool {
	return level >= 1 && level >= lastLevel(v)
}

// tableKeys returns the keys a table's filter indexes, or for a table
// without a filter its entries (what a filter would index, near enough).
func (db *DB) tableKeys(f *manifest.FileMetadata) float64 {
	fs, ok := db.tableFilterStats(f)
	if !ok {
		return 0
	}
	if fs.keys > 0 {
		return float64(fs.keys)
	}
	return float64(fs.entries)
}

// levelFilterBits returns the bits per key for a table written now to
// level of v (0 = no filter). incoming is the keys about to enter the
// level from elsewhere (a flush's memtable, a compaction's inputs from the
// level above): with FilterPerLevel a level-0 table is a run of its own of
// that size, and a deeper level grows by it. leaving are the tables those
// keys come from (a compaction's inputs from the level above): their
// level shrinks by them. v may be nil (during recovery): the uniform
// setting then applies.
func (db *DB) levelFilterBits(v *manifest.Version, level int, incoming float64, leaving ...*manifest.FileMetadata) float64 {
	return db.writeFilterBits(v, level, incoming, leaving, 0, nil)
}

// writeFilterBits is levelFilterBits for a write of written keys that
// replaces the tables in replaced: under FilterPerLevel (without
// FilterSkipLastLevel) the choice is corrected toward the memory budget
// (budgetedBits). written 0 asks for the per-level choice alone.
func (db *DB) writeFilterBits(v *manifest.Version, level int, incoming float64, leaving []*manifest.FileMetadata, written float64, replaced []*manifest.FileMetadata) float64 {
	uniform := db.opts.filterBitsPerKey()
	if uniform == 0 || v == nil {
		return uniform
	}
	if db.opts.FilterSkipLastLevel && isLastLevel(v, level) {
		return 0
	}
	if !db.opts.FilterPerLevel {
		return uniform
	}
	keys, probed, target := db.policyShape(v, level, incoming, leaving)
	if target < 0 || keys[target] == 0 {
		return uniform // nothing known of the run: the uniform setting
	}
	bits := filter.AllocateBitsProbed(keys, probed, uniform, maxPolicyBits)[target]
	if !db.opts.FilterSkipLastLevel {
		bits = db.budgetedBits(v, bits, uniform, written, replaced)
	}
	// Hundredths of a bit: tables record the setting exactly, and a
	// rounded one reads better in properties and metrics.
	return math.Round(bits*100) / 100
}

// policyShape returns the sorted runs an absent Get probes, as the policy
// sees them for a table written to level of v: each run's keys, the
// fraction of absent keys that probe it (filtercoverage.go), and which
// run the table joins (-1: none). incoming and leaving are as for
// levelFilterBits.
func (db *DB) policyShape(v *manifest.Version, level int, incoming float64, leaving []*manifest.FileMetadata) (keys, probed []float64, target int) {
	// The runs an absent Get probes: each level-0 table, then one per
	// deeper level. The last level is not one when its tables go without
	// filters: the budget is then spread over the others.
	skip := -1
	if db.opts.FilterSkipLastLevel {
		skip = lastLevel(v)
	}
	var runs []policyRun
	target = -1
	var l0 float64
	for _, f := range v.Levels[0] {
		n := db.tableKeys(f)
		runs = append(runs, policyRun{level: 0, tables: []*manifest.FileMetadata{f}})
		keys = append(keys, n)
		l0 += n
	}
	if level == 0 {
		if incoming == 0 && len(v.Levels[0]) > 0 {
			incoming = l0 / float64(len(v.Levels[0])) // the typical flush
		}
		// A flush spans what its memtable held: its range is unknown, so
		// it counts as covering every key.
		target = len(keys)
		runs = append(runs, policyRun{level: 0, incoming: incoming, spansAll: true})
		keys = append(keys, incoming)
	}
	for l := 1; l < manifest.NumLevels; l++ {
		if l == skip && l != level {
			continue
		}
		run := policyRun{level: l}
		var n float64
		for _, f := range v.Levels[l] {
			if !slices.Contains(leaving, f) {
				n += db.tableKeys(f)
				run.tables = append(run.tables, f)
			}
		}
		if l == level {
			n += incoming
			run.incoming = incoming
			run.joining = leaving
			target = len(keys)
		}
		runs = append(runs, run)
		keys = append(keys, n)
	}
	return keys, db.probedFractions(v, runs, leaving), target
}

// policyFilterBits is levelFilterBits on the live tree (the uniform
// setting before Open has one, during recovery). The tables it reads the
// key counts of are opened outside db.mu.
func (db *DB) policyFilterBits(level int, incoming float64) float64 {
	if db.readState.Load() == nil {
		return db.levelFilterBits(nil, level, incoming)
	}
	s, slot := db.loadReadState()
	defer s.unref(slot)
	return db.writeFilterBits(s.v.Version, level, incoming, nil, incoming, nil)
}

// compactionFilterBits is the policy's bits per key for c's outputs: the
// output level of v, grown by the keys c brings from the level above.
func (db *DB) compactionFilterBits(c *compaction.Compaction, v *manifest.Version) float64 {
	var incoming float64
	var leaving []*manifest.FileMetadata
	if c.Level != c.OutputLevel && c.Level > 0 && db.opts.FilterPerLevel {
		// Level-0 inputs are runs of their own, counted as such.
		for _, f := range c.Inputs[0] {
			incoming += db.tableKeys(f)
		}
		leaving = c.Inputs[0]
	}
	// The outputs replace every input and hold about as many keys. A
	// rewrite in place (Compact re-filtering a level) re-applies the
	// policy for the tree as it stands and takes its choice uncorrected:
	// a level rewritten on the current shape spends its share of the
	// budget exactly, and the controller would instead pin whatever split
	// the tree has (every split that spends the budget is one it keeps).
	var written float64
	var replaced []*manifest.FileMetadata
	if c.Level != c.OutputLevel {
		replaced = slices.Concat(c.Inputs[0], c.Inputs[1])
		for _, f := range replaced {
			written += db.tableKeys(f)
		}
	}
	return db.writeFilterBits(v, c.OutputLevel, incoming, leaving, written, replaced)
}
