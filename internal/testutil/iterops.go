package testutil

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
)

// ParseKey parses <key>#<seq>,<SET|DEL> as that internal key. With search
// it also accepts <key>#<seq> and <key>: the search key that sorts before
// every version of <key> at or below <seq> (MaxSeq when omitted).
func ParseKey(s string, search bool) ([]byte, error) {
	ukey, rest, ok := strings.Cut(s, "#")
	if !ok {
		if search {
			return base.MakeSearchKey([]byte(ukey), base.MaxSeq), nil
		}
		return nil, fmt.Errorf("key %q: want <key>#<seq>,<kind>", s)
	}
	seqStr, kindStr, hasKind := strings.Cut(rest, ",")
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("key %q: %v", s, err)
	}
	switch {
	case !hasKind && search:
		return base.MakeSearchKey([]byte(ukey), seq), nil
	case kindStr == "SET":
		return base.MakeInternalKey([]byte(ukey), seq, base.KindSet), nil
	case kindStr == "DEL":
		return base.MakeInternalKey([]byte(ukey), seq, base.KindDelete), nil
	}
	return nil, fmt.Errorf("key %q: want <key>#<seq>,SET or <key>#<seq>,DEL", s)
}

// RunIterOps applies the positioning commands of input to it, one per line
// (first, last, next, prev, seek-ge <key>, seek-lt <key>, keys as
// ParseKey's search form), and prints each with what it landed on: show of
// the entry, "." when not positioned, "error: " and showErr of the error.
// An unknown command or key is an error.
func RunIterOps(input string, it base.InternalIterator, show func(ikey, value []byte) string, showErr func(error) string) (string, error) {
	var b strings.Builder
	for line := range strings.Lines(input) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		op, arg, _ := strings.Cut(line, " ")
		var ok bool
		switch op {
		case "first":
			ok = it.First()
		case "last":
			ok = it.Last()
		case "next":
			ok = it.Next()
		case "prev":
			ok = it.Prev()
		case "seek-ge", "seek-lt":
			k, err := ParseKey(strings.TrimSpace(arg), true)
			if err != nil {
				return "", fmt.Errorf("%s: %v", line, err)
			}
			if op == "seek-ge" {
				ok = it.SeekGE(k)
			} else {
				ok = it.SeekLT(k)
			}
		default:
			return "", fmt.Errorf("unknown iterator operation %q", line)
		}
		fmt.Fprintf(&b, "%s: ", line)
		switch {
		case ok != it.Valid():
			fmt.Fprintf(&b, "returned %t but Valid is %t\n", ok, it.Valid())
		case it.Error() != nil:
			fmt.Fprintf(&b, "error: %s\n", showErr(it.Error()))
		case !ok:
			b.WriteString(".\n")
		default:
			b.WriteString(show(it.Key(), it.Value()))
			b.WriteString("\n")
		}
	}
	return b.String(), nil
}
