package lru

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type elem struct {
	id   int
	node Node[*elem]
}

func newElems(n int) []*elem {
	es := make([]*elem, n)
	for i := range es {
		es[i] = &elem{id: i}
		es[i].node.Value = es[i]
	}
	return es
}

// ids returns l's elements front to back, after checking the package's
// invariants: one ring, Len nodes in it, each recording l.
func ids(t *testing.T, l *List[*elem]) []int {
	t.Helper()
	var out []int
	if l.Len() == 0 {
		if l.Front() != nil || l.Back() != nil {
			t.Fatal("empty list has a front or back")
		}
		return out
	}
	prev := &l.root
	for n := l.root.next; n != &l.root; n = n.next {
		if n.prev != prev || n.list != l || !n.InList() {
			t.Fatalf("node %d: broken links", n.Value.id)
		}
		if len(out) > l.Len() {
			t.Fatalf("more than Len = %d nodes in the ring", l.Len())
		}
		out = append(out, n.Value.id)
		prev = n
	}
	if l.root.prev != prev || len(out) != l.Len() {
		t.Fatalf("ring of %d nodes, Len %d", len(out), l.Len())
	}
	if l.Front().Value.id != out[0] || l.Back().Value.id != out[len(out)-1] {
		t.Fatal("Front or Back is not an end of the ring")
	}
	// Next walks the same order and stops at the back.
	var walked []int
	for n := l.Front(); n != nil; n = n.Next() {
		walked = append(walked, n.Value.id)
	}
	if !slices.Equal(walked, out) {
		t.Fatalf("Next walks %v, ring is %v", walked, out)
	}
	return out
}

func expect(t *testing.T, l *List[*elem], want ...int) {
	t.Helper()
	if got := ids(t, l); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("list %v, want %v", got, want)
	}
}

func TestList(t *testing.T) {
	var l List[*elem] // the zero value is ready
	expect(t, &l)
	es := newElems(4)
	for _, e := range es {
		l.PushFront(&e.node)
	}
	expect(t, &l, 3, 2, 1, 0)
	l.MoveToFront(&es[0].node)
	expect(t, &l, 0, 3, 2, 1)
	l.MoveToFront(&es[0].node) // already in front
	expect(t, &l, 0, 3, 2, 1)
	l.MoveToFront(&es[2].node)
	expect(t, &l, 2, 0, 3, 1)
	l.Remove(l.Back())
	expect(t, &l, 2, 0, 3)
	if es[1].node.InList() || es[1].node.Next() != nil || es[1].node.prev != nil {
		t.Fatal("a removed node keeps its links")
	}
	l.Remove(&es[2].node) // the front
	l.Remove(&es[3].node)
	expect(t, &l, 0)
	l.Remove(&es[0].node)
	expect(t, &l)
	// Removed nodes can be pushed again, to this list or another.
	var other List[*elem]
	l.PushFront(&es[1].node)
	other.PushFront(&es[0].node)
	expect(t, &l, 1)
	expect(t, &other, 0)
}

// TestRemoveWhileWalking is how a cache drops all elements of one kind:
// take the next node before removing the current one.
func TestRemoveWhileWalking(t *testing.T) {
	var l List[*elem]
	for _, e := range newElems(10) {
		l.PushFront(&e.node)
	}
	for n := l.Front(); n != nil; {
		next := n.Next()
		if n.Value.id%3 != 0 {
			l.Remove(n)
		}
		n = next
	}
	expect(t, &l, 9, 6, 3, 0)
}

func TestMisusePanics(t *testing.T) {
	var l, other List[*elem]
	es := newElems(2)
	l.PushFront(&es[0].node)
	for name, f := range map[string]func(){
		"push twice":        func() { l.PushFront(&es[0].node) },
		"push into another": func() { other.PushFront(&es[0].node) },
		"move from another": func() { other.MoveToFront(&es[0].node) },
		"remove from another": func() {
			other.Remove(&es[0].node)
		},
		"move unlinked":   func() { l.MoveToFront(&es[1].node) },
		"remove unlinked": func() { l.Remove(&es[1].node) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
	expect(t, &l, 0)
	expect(t, &other)
}

// TestAgainstModel applies random operations to a List and to a slice.
func TestAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	es := newElems(16)
	var l List[*elem]
	var model []int // front first
	for i := 0; i < 20_000; i++ {
		e := es[rng.IntN(len(es))]
		at := slices.Index(model, e.id)
		switch rng.IntN(3) {
		case 0:
			if at < 0 {
				l.PushFront(&e.node)
				model = slices.Insert(model, 0, e.id)
			}
		case 1:
			if at >= 0 {
				l.MoveToFront(&e.node)
				model = slices.Insert(slices.Delete(model, at, at+1), 0, e.id)
			}
		case 2:
			if at >= 0 {
				l.Remove(&e.node)
				model = slices.Delete(model, at, at+1)
			}
		}
		if e.node.InList() != slices.Contains(model, e.id) {
			t.Fatalf("op %d: InList of %d is %v", i, e.id, e.node.InList())
		}
		if i%97 == 0 {
			expect(t, &l, model...)
		}
	}
	expect(t, &l, model...)
}

func TestNoAllocations(t *testing.T) {
	es := newElems(8)
	var l List[*elem]
	allocs := testing.AllocsPerRun(100, func() {
		for _, e := range es {
			l.PushFront(&e.node)
		}
		l.MoveToFront(&es[3].node)
		l.MoveToFront(l.Back())
		for l.Len() > 0 {
			l.Remove(l.Back())
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run", allocs)
	}
}

func BenchmarkMoveToFront(b *testing.B) {
	es := newElems(64)
	var l List[*elem]
	for _, e := range es {
		l.PushFront(&e.node)
	}
	b.ReportAllocs()
	for b.Loop() {
		l.MoveToFront(l.Back())
	}
}
