//go:build invariants

package invariants

// Enabled: built with -tags invariants.
const Enabled = true
