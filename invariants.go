package bloomkv

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/invariants"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// Structural checks of the tree (sorted levels, table bounds, filters),
// run by the tests after every flush and compaction.

// errInvariant marks a violated structural invariant of the tree.
var errInvariant = errors.New("bloomkv: invariant violated")

// checkInvariants verifies the current version's shape (levels >= 1 sorted
// and non-overlapping, level 0 newest first) and, for every table, that its
// blocks decode with valid checksums, that its key range matches the
// manifest, and that its filter reports every key it holds. It reads every
// table, so it is slow.
func (db *DB) checkInvariants() error {
	return db.checkTableInvariants(nil)
}

// checkTableInvariants is checkInvariants limited to the tables in only
// (nil: every table); the version's shape is always checked.
func (db *DB) checkTableInvariants(only map[uint64]bool) error {
	if db.closed.Load() {
		return ErrClosed
	}
	s, slot := db.loadReadState()
	defer s.unref(slot)
	if err := s.v.CheckInvariants(); err != nil {
		return fmt.Errorf("%w: %v", errInvariant, err)
	}
	for level, files := range s.v.Levels {
		for _, f := range files {
			if only != nil && !only[f.FileNum] {
				continue
			}
			r, release, err := findTable(db.tableCache, f)
			if err != nil {
				return err
			}
			err = r.Check()
			// The bounds: the entries' range widened to the table's range
			// tombstones.
			smallest, largest, _, _ := r.Bounds()
			release()
			if err != nil {
				return fmt.Errorf("level %d table %d: %w", level, f.FileNum, err)
			}
			if !bytes.Equal(smallest, f.Smallest) || !bytes.Equal(largest, f.Largest) {
				return fmt.Errorf("%w: level %d table %d: manifest range [%x, %x] differs from contents [%x, %x]",
					errInvariant, level, f.FileNum, f.Smallest, f.Largest, smallest, largest)
			}
		}
	}
	return nil
}

// invariantChecks makes every version change (flush, compaction, move)
// verify the version's shape and the tables it added, and panic on a
// violation. Tests turn it on in TestMain, and so does building with
// -tags invariants (internal/invariants); it reads every new table, so
// production builds leave it off. (Tables are immutable: checking each once,
// when it joins the tree, covers them all.)
var invariantChecks = invariants.Enabled

func (db *DB) maybeCheckInvariants(edit *manifest.VersionEdit) {
	if !invariantChecks {
		return
	}
	added := map[uint64]bool{}
	for _, nf := range edit.NewFiles {
		added[nf.Meta.FileNum] = true
	}
	// Only a broken invariant or damaged data is a bug here; an I/O error
	// (tests inject them) says nothing about the tree.
	if err := db.checkTableInvariants(added); errors.Is(err, errInvariant) || errors.Is(err, ErrCorruption) {
		panic(fmt.Sprintf("bloomkv: invariant violated after a version change: %v", err))
	}
}

// checkCompactionLevels verifies that compaction c, picked from v, skips
// no level holding a table it overlaps: a level-0 compaction may write
// below level 1 (into the base level under DynamicLevelBytes), and newer
// versions would then sit below older ones in the levels it passed over.
// It reads only the version, so it is cheap; runCompaction calls it under
// invariantChecks.
func checkCompactionLevels(c *tableCompaction, v *manifest.Version) error {
	if c.OutputLevel <= c.Level+1 {
		return nil
	}
	all := append(append([]*manifest.FileMetadata{}, c.Inputs[0]...), c.Inputs[1]...)
	lo, hi := compaction.KeyRange(all)
	for l := c.Level + 1; l < c.OutputLevel; l++ {
		if over := v.Overlaps(l, lo, hi); len(over) > 0 {
			return fmt.Errorf("%w: compaction L%d -> L%d passes over level %d, which holds %s in its range [%q, %q]",
				errInvariant, c.Level, c.OutputLevel, l, over[0], lo, hi)
		}
	}
	return nil
}
