package bloomkv

import (
	"github.com/bloomkv/bloomkv/internal/filterpolicy"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// What the filter tests ask the policy about the engine's versions
// directly (filterpolicy.go is the engine's adapter; the policy's own
// tests are in internal/filterpolicy).

// lastLevel returns the deepest level of v holding a table (0 if none).
func lastLevel(v *manifest.Version) int {
	return filterpolicy.LastLevel[*manifest.FileMetadata](v)
}

// policyShape returns the runs an absent Get probes as the per-level
// policy sees them for a table written to level of v (filterpolicy's
// Shape): each run's keys, its probed fraction, and the run the table
// joins.
func (db *DB) policyShape(v *manifest.Version, level int, incoming float64, leaving []*manifest.FileMetadata) (keys, probed []float64, target int) {
	return db.filterPolicy.Shape(v, level, incoming, leaving)
}
