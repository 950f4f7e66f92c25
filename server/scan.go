package server

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Version is the server's version, reported by HELLO and INFO.
const Version = "0.1.0"

// cursorTable maps SCAN cursors to the last key a call examined. Redis
// clients treat a cursor as a number, and a key does not fit in one, so
// the key stays here: at most maxCursors, each for cursorTTL.
type cursorTable struct {
	mu    sync.Mutex
	next  uint64              // guarded by mu
	m     map[uint64]cursorAt // guarded by mu
	order []uint64            // guarded by mu: ids, oldest first
}

type cursorAt struct {
	after []byte
	made  time.Time
}

const (
	maxCursors = 10000
	cursorTTL  = 10 * time.Minute
)

func newCursorTable() *cursorTable {
	// Start at a random point so that cursors of an earlier process (or
	// another node) are unlikely to name a live one here.
	return &cursorTable{next: rand.Uint64()>>1 | 1, m: make(map[uint64]cursorAt)}
}

func (t *cursorTable) put(after []byte) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for len(t.order) > 0 {
		old, ok := t.m[t.order[0]]
		if ok && len(t.m) < maxCursors && now.Sub(old.made) < cursorTTL {
			break
		}
		delete(t.m, t.order[0])
		t.order = t.order[1:]
	}
	id := t.next
	t.next++
	if t.next == 0 {
		t.next = 1
	}
	t.m[id] = cursorAt{after: append([]byte(nil), after...), made: now}
	t.order = append(t.order, id)
	return id
}

func (t *cursorTable) get(id uint64) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.m[id]
	if !ok || time.Since(c.made) >= cursorTTL {
		return nil, false
	}
	return c.after, true
}

// globMatch reports whether s matches the glob pattern p as Redis's
// stringmatchlen does (SCAN MATCH, KEYS): * any run of bytes, ? one byte,
// \x the byte x (a backslash that ends the pattern is itself), and
// [...] a class of one byte: ^ first negates it, a-z is a range (ends in
// either order), \x is x, and a ] right after [ or [^ closes it, so []
// matches nothing and [^] any byte. A class that the pattern ends before
// its ] takes what it has: "a[b" matches "ab". In "[a-]" the ] is the end
// of a range, so the class is unclosed and holds ']' to 'a'.
//
// Every element but * matches exactly one byte, so backtracking to the
// last star is enough: linear in practice, never exponential. (One edge
// differs and cannot show: Redis's function does not match an empty s
// with "*"; keys are never empty here.)
func globMatch(p, s []byte) bool {
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) {
			if p[pi] == '*' {
				starP, starS = pi, si
				pi++
				continue
			}
			if next, ok := globOne(p, pi, s[si]); ok {
				pi, si = next, si+1
				continue
			}
		}
		if starP < 0 {
			return false
		}
		pi, starS = starP+1, starS+1
		si = starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// globOne matches byte c against the pattern element at p[i] (not a
// star) and returns the index after the element.
func globOne(p []byte, i int, c byte) (int, bool) {
	switch p[i] {
	case '?':
		return i + 1, true
	case '\\':
		if i+1 < len(p) {
			i++
		}
		return i + 1, p[i] == c
	case '[':
		return globClass(p, i+1, c)
	}
	return i + 1, p[i] == c
}

// globClass matches c against the class whose body starts at p[i] (after
// the '['), returning the index after its ']' or after the pattern's end.
func globClass(p []byte, i int, c byte) (int, bool) {
	neg := i < len(p) && p[i] == '^'
	if neg {
		i++
	}
	match := false
	for ; ; i++ {
		switch {
		case i < len(p)-1 && p[i] == '\\':
			i++
			match = match || p[i] == c
		case i >= len(p):
			return len(p), match != neg // unclosed: the class ends with the pattern
		case p[i] == ']':
			return i + 1, match != neg
		case i+2 < len(p) && p[i+1] == '-':
			lo, hi := p[i], p[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (c >= lo && c <= hi)
			i += 2
		default:
			match = match || p[i] == c
		}
	}
}
