package lru

// Node links its element into a List. The element embeds it and sets
// Value to itself (a pointer to the element) before the node is first
// pushed; the zero Node is in no list.
type Node[T any] struct {
	prev, next *Node[T]
	list       *List[T] // the List the node is in; nil when in none
	// Value is the element that embeds the node. Constant once the node
	// is pushed: it may be read without the owner's mutex.
	Value T
}

// InList reports whether n is in a list.
func (n *Node[T]) InList() bool { return n.list != nil }

// Next returns the node after n, towards the least recently used end, or
// nil when n is the last or in no list.
func (n *Node[T]) Next() *Node[T] {
	if n.list == nil || n.next == &n.list.root {
		return nil
	}
	return n.next
}

// List holds nodes from the most recently used (front) to the least
// (back). The zero value is an empty list ready to use. A List must not
// be copied once a node has been pushed: its nodes point at its sentinel.
type List[T any] struct {
	root Node[T] // sentinel: root.next is the front, root.prev the back
	len  int
}

// Len returns the number of nodes in l.
func (l *List[T]) Len() int { return l.len }

// Front returns the most recently used node, or nil when l is empty.
func (l *List[T]) Front() *Node[T] {
	if l.len == 0 {
		return nil
	}
	return l.root.next
}

// Back returns the least recently used node, or nil when l is empty.
func (l *List[T]) Back() *Node[T] {
	if l.len == 0 {
		return nil
	}
	return l.root.prev
}

// PushFront links n, which must be in no list, as the most recently used.
func (l *List[T]) PushFront(n *Node[T]) {
	if n.list != nil {
		panic("bloomkv/internal/lru: PushFront of a node already in a list")
	}
	if l.root.next == nil { // the zero List: close the empty ring
		l.root.next, l.root.prev = &l.root, &l.root
	}
	l.linkFront(n)
	l.len++
}

// MoveToFront marks n, which must be in l, the most recently used.
func (l *List[T]) MoveToFront(n *Node[T]) {
	if n.list != l {
		panic("bloomkv/internal/lru: MoveToFront of a node not in this list")
	}
	if l.root.next == n {
		return
	}
	n.prev.next, n.next.prev = n.next, n.prev
	l.linkFront(n)
}

// Remove unlinks n, which must be in l. n may then be pushed again, to l
// or another list.
func (l *List[T]) Remove(n *Node[T]) {
	if n.list != l {
		panic("bloomkv/internal/lru: Remove of a node not in this list")
	}
	n.prev.next, n.next.prev = n.next, n.prev
	n.prev, n.next, n.list = nil, nil, nil
	l.len--
}

// linkFront links n after the sentinel. The ring must be closed.
func (l *List[T]) linkFront(n *Node[T]) {
	n.prev, n.next, n.list = &l.root, l.root.next, l
	l.root.next.prev = n
	l.root.next = n
}
