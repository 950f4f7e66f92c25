package filterpolicy

import "slices"

// The per-level policy's memory controller.
//
// AllocateBits spends exactly the budget on the tree as it stands, but a
// table keeps the bits it was written with while the tree around it
// changes shape: a level written while it was the largest got few bits
// and keeps them after a larger level appears below it, and the reverse.
// Left alone, a growing tree drifts from the budget (measured: 17% under,
// then 10% over once trivial moves were re-filtered). So each write is
// also asked to close the gap between what the live tables spend and
// what the uniform setting would spend on them:
//
//	gap = b̄ (N_other + n) − M_other − n b_monkey
//	b   = b_monkey + gap / n,  within ± MaxBudgetCorrection of b_monkey
//
// where the write produces n keys, the tables it replaces are left out of
// N_other (keys) and M_other (filter bits, each table's bits per key times
// its filter keys), and b_monkey is AllocateBits' choice for the level.
// Closing the whole gap at once does not overshoot: the replaced tables
// leave the sums, and the write's own keys enter them at the chosen b, so
// after it the live tree spends the budget exactly (up to the keys a
// compaction drops). The bound keeps a small write (a flush of 2% of the
// keys) from taking an extreme setting to repay a debt a large one will
// repay better; level-0 tables are short-lived anyway.

// MaxBudgetCorrection is how far, in bits per key, the controller may move
// a write from the per-level choice.
const MaxBudgetCorrection = 2

// budgeted returns monkeyBits corrected toward the budget (uniform bits
// per key over every live key of v) for a write of written keys that
// replaces the tables in replaced. With written 0 there is nothing to
// correct by.
func (p *Policy[T, V]) budgeted(v V, monkeyBits, uniform, written float64, replaced []T) float64 {
	if written <= 0 || uniform <= 0 {
		return monkeyBits
	}
	var keys, spent float64
	for l := range NumLevels {
		for _, f := range v.Level(l) {
			if slices.Contains(replaced, f) {
				continue
			}
			s := p.stats(f)
			keys += s.Keys()
			if s.BitsPerKey > 0 {
				spent += s.BitsPerKey * float64(s.FilterKeys)
			}
		}
	}
	gap := uniform*(keys+written) - spent - written*monkeyBits
	bits := monkeyBits + gap/written
	return min(max(bits, monkeyBits-MaxBudgetCorrection, 0), monkeyBits+MaxBudgetCorrection, MaxBits)
}
