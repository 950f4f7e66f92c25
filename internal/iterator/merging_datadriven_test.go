package iterator

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/testutil"
)

// TestMergingDataDriven runs testdata/merging: children described as text,
// then positioning commands on a merging iterator over them, each printed
// with where it landed. The commands are documented at the top of that
// file. Run with -rewrite to regenerate the expected outputs.
func TestMergingDataDriven(t *testing.T) {
	var children []ddChild
	datadriven.RunTest(t, "testdata/merging", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "define":
			children = children[:0]
			var b strings.Builder
			for line := range strings.Lines(d.Input) {
				line = strings.TrimSpace(line)
				if line == "" {
					continue
				}
				c, err := parseChild(line)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				children = append(children, c)
				fmt.Fprintf(&b, "child %d: %s\n", len(children)-1, c)
			}
			if len(children) == 0 {
				return "no children"
			}
			return b.String()

		case "iter":
			iters := make([]base.InternalIterator, len(children))
			for i, c := range children {
				iters[i] = c.iter()
			}
			m := NewMerging(iters...)
			out, err := testutil.RunIterOps(d.Input, m, func(k, v []byte) string {
				return formatEntry(k, v) + fmt.Sprintf(" (child %d)", m.(*mergingIter).heap.items[0].index)
			}, func(err error) string { return err.Error() })
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			if err := m.Close(); err != nil {
				out += fmt.Sprintf("close: %v\n", err)
			}
			return out

		default:
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		}
	})
}

// ddChild is one child of a merging iterator in testdata/merging.
type ddChild struct {
	entries []entry
	// failAfter, when >= 0, makes the child fail every positioning call
	// after its first failAfter ones.
	failAfter int
}

// parseChild parses "[fail-after=N] <entry> <entry> ...": entries in
// increasing internal-key order, each <key>#<seq>,SET:<value> or
// <key>#<seq>,DEL; "-" alone is a child with no entries.
func parseChild(line string) (ddChild, error) {
	c := ddChild{failAfter: -1}
	for _, tok := range strings.Fields(line) {
		if n, ok := strings.CutPrefix(tok, "fail-after="); ok {
			v, err := strconv.Atoi(n)
			if err != nil {
				return c, fmt.Errorf("child %q: %v", line, err)
			}
			c.failAfter = v
			continue
		}
		if tok == "-" {
			continue
		}
		e, err := parseEntry(tok)
		if err != nil {
			return c, fmt.Errorf("child %q: %v", line, err)
		}
		if n := len(c.entries); n > 0 && base.CompareInternal(c.entries[n-1].ikey(), e.ikey()) >= 0 {
			return c, fmt.Errorf("child %q: %s does not sort after %s", line, tok, c.entries[n-1])
		}
		c.entries = append(c.entries, e)
	}
	return c, nil
}

func (c ddChild) String() string {
	s := make([]string, len(c.entries))
	for i, e := range c.entries {
		s[i] = e.String()
	}
	out := strings.Join(s, " ")
	if out == "" {
		out = "-"
	}
	if c.failAfter >= 0 {
		out = fmt.Sprintf("fail-after=%d %s", c.failAfter, out)
	}
	return out
}

// iter returns the child's iterator: a SliceIter, failing as asked, behind
// a scribbler so that a merging iterator that keeps a child's key past the
// child's next move prints garbage.
func (c ddChild) iter() base.InternalIterator {
	var it base.InternalIterator = sliceIterOf(c.entries)
	if c.failAfter >= 0 {
		it = &failIter{InternalIterator: it, failAt: c.failAfter}
	}
	return scribble(it)
}

func (e entry) String() string {
	if e.kind == base.KindDelete {
		return fmt.Sprintf("%s#%d,DEL", e.ukey, e.seq)
	}
	return fmt.Sprintf("%s#%d,SET:%s", e.ukey, e.seq, e.value)
}

// parseEntry parses <key>#<seq>,SET:<value> or <key>#<seq>,DEL.
func parseEntry(s string) (entry, error) {
	ukey, rest, ok := strings.Cut(s, "#")
	if !ok {
		return entry{}, fmt.Errorf("entry %q: want <key>#<seq>,SET:<value> or <key>#<seq>,DEL", s)
	}
	seqStr, rest, _ := strings.Cut(rest, ",")
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if err != nil {
		return entry{}, fmt.Errorf("entry %q: %v", s, err)
	}
	e := entry{ukey: ukey, seq: seq}
	switch kind, value, _ := strings.Cut(rest, ":"); kind {
	case "SET":
		e.kind, e.value = base.KindSet, value
	case "DEL":
		e.kind = base.KindDelete
	default:
		return entry{}, fmt.Errorf("entry %q: unknown kind %q", s, kind)
	}
	return e, nil
}

func formatEntry(ikey, value []byte) string {
	ukey, seq, kind, ok := base.ParseInternalKey(ikey)
	if !ok {
		return fmt.Sprintf("malformed key %x", ikey)
	}
	if kind == base.KindDelete {
		return fmt.Sprintf("%s#%d,DEL", ukey, seq)
	}
	return fmt.Sprintf("%s#%d,SET:%s", ukey, seq, value)
}
