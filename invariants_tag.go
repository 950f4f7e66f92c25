//go:build invariants

package bloomkv

// Building with -tags invariants turns on the checks every test of this
// package runs after each version change (see invariantChecks), for
// programs that want them in their own tests or soak runs.
func init() { invariantChecks = true }
