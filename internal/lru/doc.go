// Package lru is the recency list that bloomkv's caches share: an
// intrusive doubly linked list of elements, most recently used first. The
// sstable block cache and table cache each keep their elements in a map
// for lookup and in a List for eviction order.
//
// Intrusive: every element embeds a Node, so that pushing, moving and
// removing an element allocate nothing, and a cache that found an element
// in its map reaches its place in the list in O(1).
//
// # Locking
//
// A List does no locking of its own. Its owner guards the List and the
// links of every Node in it with one mutex of its own (the owner's mu),
// which every method of List and Node requires, except reading Node.Value,
// which never changes once the node is first pushed.
//
// # Invariants (under the owner's mutex)
//
//   - The nodes of a List and its sentinel form one ring: n.next.prev == n
//     and n.prev.next == n for each.
//   - Len is the number of nodes in the ring besides the sentinel; each of
//     them records the List it is in.
//   - A node is in at most one List at a time. A node in none has nil
//     links and may be pushed again.
//
// Misuse that would break them (pushing a node that is in a list, moving
// or removing one that is not in this list) panics rather than corrupting
// the list.
package lru
