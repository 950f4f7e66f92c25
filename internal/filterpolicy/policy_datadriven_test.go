package filterpolicy

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/bloomkv/bloomkv/filter"
)

// TestPolicyDataDriven runs testdata/policy: a tree and settings described
// as text, then the policy's answers printed. The commands are documented
// at the top of that file. Run with -rewrite to regenerate the expected
// outputs (and review the diff).
func TestPolicyDataDriven(t *testing.T) {
	var (
		tree   = &Levels[*TableDesc]{}
		byName = map[string]*TableDesc{}
		p      = New[*TableDesc, *Levels[*TableDesc]](Settings{}, (*TableDesc).TableStats)
	)
	tables := func(d *datadriven.TestData, arg string) []*TableDesc {
		var names []string
		d.MaybeScanArgs(t, arg, &names)
		var ts []*TableDesc
		for _, n := range names {
			f, ok := byName[n]
			if !ok {
				d.Fatalf(t, "%s: no table %q", arg, n)
			}
			ts = append(ts, f)
		}
		return ts
	}
	datadriven.RunTest(t, "testdata/policy", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "define":
			nt, names, err := parseTree(d.Input)
			if err != nil {
				return err.Error()
			}
			// A new tree each time: the coverage memo keys on identity.
			tree, byName = nt, names
			return formatTree(tree)

		case "settings":
			var s Settings
			d.MaybeScanArgs(t, "bits", &s.BitsPerKey)
			s.PerLevel = d.HasArg("per-level")
			s.SkipLastLevel = d.HasArg("skip-last")
			s.Variant = filter.VariantStandard
			if d.HasArg("variant") {
				var v string
				d.ScanArgs(t, "variant", &v)
				s.Variant = parseVariant(t, d, v)
			}
			d.MaybeScanArgs(t, "key-name", &s.KeyName)
			s.WholeKeys = d.HasArg("whole-keys")
			s.CacheFilterBlocks = d.HasArg("cache-filters")
			if d.HasArg("pinning") {
				var v string
				d.ScanArgs(t, "pinning", &v)
				switch v {
				case "level0":
					s.Pinning = PinLevel0
				case "all":
					s.Pinning = PinAll
				case "none":
					s.Pinning = PinNone
				default:
					d.Fatalf(t, "unknown pinning %q", v)
				}
			}
			p = New[*TableDesc, *Levels[*TableDesc]](s, (*TableDesc).TableStats)
			return "ok"

		case "bits":
			var w Write[*TableDesc]
			d.ScanArgs(t, "level", &w.Level)
			d.MaybeScanArgs(t, "incoming", &w.Incoming)
			d.MaybeScanArgs(t, "written", &w.Written)
			w.Leaving, w.Replaced = tables(d, "leaving"), tables(d, "replaced")
			var v *Levels[*TableDesc]
			if !d.HasArg("no-tree") {
				v = tree
			}
			return fmt.Sprintf("%.2f bits/key\n", p.BitsPerKey(v, w))

		case "compaction":
			var from, to int
			d.ScanArgs(t, "from", &from)
			d.ScanArgs(t, "to", &to)
			return fmt.Sprintf("%.2f bits/key\n", p.CompactionBits(tree, from, to, tables(d, "upper"), tables(d, "lower")))

		case "shape":
			var level int
			var incoming float64
			d.ScanArgs(t, "level", &level)
			d.MaybeScanArgs(t, "incoming", &incoming)
			keys, probed, target := p.Shape(tree, level, incoming, tables(d, "leaving"))
			runs := runNames(tree, level, p.SkipLastLevel)
			var b strings.Builder
			for i := range keys {
				mark := ""
				if i == target {
					mark = "  <- target"
				}
				fmt.Fprintf(&b, "%-8s %7.0f keys  probed %.3f%s\n", runs[i], keys[i], probed[i], mark)
			}
			if target < 0 {
				b.WriteString("no target run\n")
			}
			return b.String()

		case "stale":
			var w Written
			var level int
			d.ScanArgs(t, "level", &level)
			d.MaybeScanArgs(t, "bits", &w.BitsPerKey)
			w.Variant = filter.VariantStandard
			if d.HasArg("variant") {
				var v string
				d.ScanArgs(t, "variant", &v)
				w.Variant = parseVariant(t, d, v)
			}
			d.MaybeScanArgs(t, "key-name", &w.KeyName)
			w.WholeKeys = d.HasArg("whole-keys")
			want := p.BitsPerKey(tree, Write[*TableDesc]{Level: level})
			if p.Stale(tree, level, w) {
				return fmt.Sprintf("stale (the level's choice: %.2f bits/key)\n", want)
			}
			return fmt.Sprintf("current (the level's choice: %.2f bits/key)\n", want)

		case "pins":
			var b strings.Builder
			for l := range NumLevels {
				fmt.Fprintf(&b, "L%d:%v ", l, p.PinsFilter(l))
			}
			return strings.TrimSpace(b.String()) + "\n"

		case "last-level":
			return fmt.Sprintf("L%d\n", LastLevel[*TableDesc](tree))
		}
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	})
}

func parseVariant(t *testing.T, d *datadriven.TestData, v string) filter.Variant {
	switch v {
	case "standard":
		return filter.VariantStandard
	case "blocked":
		return filter.VariantBlocked
	case "fuse":
		return filter.VariantFuse
	}
	d.Fatalf(t, "unknown variant %q", v)
	return 0
}

// runNames names the runs Shape returns for a write to level: each
// level-0 table, the flush (a write to level 0), then the levels.
func runNames(v *Levels[*TableDesc], level int, skipLast bool) []string {
	var names []string
	for _, f := range v[0] {
		names = append(names, "L0 "+f.Name)
	}
	if level == 0 {
		names = append(names, "L0 flush")
	}
	last := LastLevel[*TableDesc](v)
	for l := 1; l < NumLevels; l++ {
		if skipLast && l == last && l != level {
			continue
		}
		names = append(names, fmt.Sprintf("L%d", l))
	}
	return names
}

// parseTree reads level lines "L<n>", each followed by that level's
// tables, "<name>: <smallest>-<largest> [keys=N] [entries=N] [bits=B]":
// keys is what the table's filter indexes (entries defaults to it), bits
// the bits per key it was written with (0: no filter).
func parseTree(input string) (*Levels[*TableDesc], map[string]*TableDesc, error) {
	tree := &Levels[*TableDesc]{}
	names := map[string]*TableDesc{}
	level := -1
	for line := range strings.Lines(input) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if l, ok := strings.CutPrefix(line, "L"); ok && !strings.Contains(l, ":") {
			n, err := strconv.Atoi(l)
			if err != nil || n < 0 || n >= NumLevels {
				return nil, nil, fmt.Errorf("bad level line %q", line)
			}
			level = n
			continue
		}
		if level < 0 {
			return nil, nil, fmt.Errorf("table %q before any level line", line)
		}
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			return nil, nil, fmt.Errorf("table line %q: want <name>: <smallest>-<largest> ...", line)
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, nil, fmt.Errorf("table line %q: no key range", line)
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			hi = lo
		}
		f := &TableDesc{Name: strings.TrimSpace(name), Smallest: []byte(lo), Largest: []byte(hi)}
		entriesSet := false
		for _, kv := range fields[1:] {
			k, v, _ := strings.Cut(kv, "=")
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("table line %q: %s: %v", line, kv, err)
			}
			switch k {
			case "keys":
				f.Stats.FilterKeys = uint64(x)
			case "entries":
				f.Stats.Entries, entriesSet = uint64(x), true
			case "bits":
				f.Stats.BitsPerKey = x
			default:
				return nil, nil, fmt.Errorf("table line %q: unknown %q", line, k)
			}
		}
		if !entriesSet {
			f.Stats.Entries = f.Stats.FilterKeys
		}
		if _, dup := names[f.Name]; dup {
			return nil, nil, fmt.Errorf("table %q twice", f.Name)
		}
		names[f.Name] = f
		tree[level] = append(tree[level], f)
	}
	return tree, names, nil
}

func formatTree(v *Levels[*TableDesc]) string {
	var b strings.Builder
	for l := range NumLevels {
		if len(v[l]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "L%d\n", l)
		for _, f := range v[l] {
			fmt.Fprintf(&b, "  %s: %s-%s keys=%d entries=%d bits=%g\n", f.Name, f.Smallest, f.Largest, f.Stats.FilterKeys, f.Stats.Entries, f.Stats.BitsPerKey)
		}
	}
	if b.Len() == 0 {
		return "empty\n"
	}
	return b.String()
}
