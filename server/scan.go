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

// globMatch reports whether s matches the Redis-style glob pattern p:
// * any run of bytes, ? one byte, [abc] [^abc] [a-z] a class, \x the byte x.
func globMatch(p, s []byte) bool {
	// Iterative, with backtracking to the last star: linear in practice,
	// never exponential.
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) {
			switch p[pi] {
			case '*':
				starP, starS = pi, si
				pi++
				continue
			case '?':
				pi++
				si++
				continue
			case '[':
				if end, ok := matchClass(p, pi, s[si]); end > 0 {
					if ok {
						pi = end
						si++
						continue
					}
				} else if s[si] == '[' { // no closing ']': a literal '['
					pi++
					si++
					continue
				}
			case '\\':
				if pi+1 < len(p) && p[pi+1] == s[si] {
					pi += 2
					si++
					continue
				}
			default:
				if p[pi] == s[si] {
					pi++
					si++
					continue
				}
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

// matchClass matches c against the class starting at p[i] == '[' and
// returns the index after its ']' (0 if there is none) and the match.
func matchClass(p []byte, i int, c byte) (int, bool) {
	i++
	neg := i < len(p) && p[i] == '^'
	if neg {
		i++
	}
	match := false
	for first := true; i < len(p); first = false {
		if p[i] == ']' && !first {
			return i + 1, match != neg
		}
		lo := p[i]
		if lo == '\\' && i+1 < len(p) {
			i++
			lo = p[i]
		}
		hi := lo
		if i+2 < len(p) && p[i+1] == '-' && p[i+2] != ']' {
			hi = p[i+2]
			i += 2
			if lo > hi {
				lo, hi = hi, lo
			}
		}
		if c >= lo && c <= hi {
			match = true
		}
		i++
	}
	return 0, false
}
