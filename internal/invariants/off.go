//go:build !invariants

// Package invariants says whether the build asked for the engine's
// expensive structural checks (-tags invariants), for programs that want
// them in their own tests or soak runs; the engine's own tests turn them
// on regardless.
package invariants

// Enabled: built with -tags invariants.
const Enabled = false
