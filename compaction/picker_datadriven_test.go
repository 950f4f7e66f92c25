package compaction

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// TestPickerDataDriven runs testdata/picker: a version described as text,
// then the picker's choices printed. The commands are documented at the top
// of that file. Run with -rewrite to regenerate the expected outputs (and
// review the diff).
func TestPickerDataDriven(t *testing.T) {
	var (
		v        = &manifest.Version{}
		opts     Options
		pointers map[int][]byte
	)
	datadriven.RunTest(t, "testdata/picker", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "define":
			opts = Options{L0CompactionThreshold: 4, LBaseMaxBytes: 1000, LevelMultiplier: 10, TargetFileSize: 100}
			d.MaybeScanArgs(t, "l0-threshold", &opts.L0CompactionThreshold)
			d.MaybeScanArgs(t, "lbase", &opts.LBaseMaxBytes)
			d.MaybeScanArgs(t, "multiplier", &opts.LevelMultiplier)
			d.MaybeScanArgs(t, "target-file-size", &opts.TargetFileSize)
			d.MaybeScanArgs(t, "file-size-multiplier", &opts.TargetFileSizeMultiplier)
			opts.DynamicLevelBytes = d.HasArg("dynamic")
			pointers = map[int][]byte{}
			nv, err := parseVersion(d.Input)
			if err != nil {
				v = &manifest.Version{}
				return err.Error()
			}
			v = nv
			return formatVersion(v)

		case "scores":
			s := Scores(v, opts)
			shape := ShapeOf(v, opts)
			var b strings.Builder
			if opts.DynamicLevelBytes {
				fmt.Fprintf(&b, "dynamic: base L%d, level 0 into L%d, last L%d\n", shape.Base, shape.L0Output, shape.Last)
			}
			fmt.Fprintf(&b, "L0: %.3f (%d files, threshold %d)\n", s[0], v.NumFiles(0), opts.L0CompactionThreshold)
			for l := 1; l < manifest.NumLevels; l++ {
				switch {
				case !opts.DynamicLevelBytes && l == manifest.NumLevels-1:
					fmt.Fprintf(&b, "L%d: %.3f (last level: not scored)\n", l, s[l])
				case !opts.DynamicLevelBytes:
					fmt.Fprintf(&b, "L%d: %.3f (%d bytes, target %.0f)\n", l, s[l], v.LevelBytes(l), shape.MaxBytes[l])
				case shape.Last == 0 || l > shape.Last:
					fmt.Fprintf(&b, "L%d: %.3f (empty, no target)\n", l, s[l])
				case l == shape.Last:
					fmt.Fprintf(&b, "L%d: %.3f (%d bytes, last level: target its size, not scored)\n", l, s[l], v.LevelBytes(l))
				case l < shape.Base && v.LevelBytes(l) == 0:
					fmt.Fprintf(&b, "L%d: %.3f (empty, above the base)\n", l, s[l])
				case l < shape.Base:
					fmt.Fprintf(&b, "L%d: %.3f (%d bytes, above the base: target %.0f, drained when not empty)\n", l, s[l], v.LevelBytes(l), shape.MaxBytes[l])
				default:
					fmt.Fprintf(&b, "L%d: %.3f (%d bytes, target %.0f)\n", l, s[l], v.LevelBytes(l), shape.MaxBytes[l])
				}
			}
			return b.String()

		case "targets":
			var b strings.Builder
			base := ShapeOf(v, opts).Base
			if opts.DynamicLevelBytes {
				fmt.Fprintf(&b, "dynamic: base L%d\n", base)
			}
			for l := 1; l < manifest.NumLevels; l++ {
				fmt.Fprintf(&b, "L%d: split at %d, grandparent overlap at most %d\n", l, opts.TargetFileSizeAt(l, base), opts.MaxGrandparentOverlapBytes(l, base))
			}
			return b.String()

		case "pointer":
			var level int
			d.ScanArgs(t, "level", &level)
			if d.HasArg("clear") {
				delete(pointers, level)
			} else {
				var key string
				d.ScanArgs(t, "key", &key)
				pointers[level] = []byte(key)
			}
			return formatPointers(pointers)

		case "pick":
			c, _ := pick(v, pointers, opts)
			if c == nil {
				return "no compaction"
			}
			out := fmt.Sprintf("L%d -> L%d, score %.3f\n", c.Level, c.OutputLevel, c.Score) + formatCompaction(c, opts)
			if d.HasArg("advance") && c.Level > 0 {
				// What the engine's compaction edit records: the largest
				// user key of the level's inputs.
				_, hi := KeyRange(c.Inputs[0])
				pointers[c.Level] = hi
				out += "pointers: " + formatPointers(pointers)
			}
			return out

		case "pick-range":
			var level int
			var start, end []byte
			d.ScanArgs(t, "level", &level)
			if arg, ok := d.Arg("start"); ok {
				start = []byte(arg.SingleVal(t))
			}
			if arg, ok := d.Arg("end"); ok {
				end = []byte(arg.SingleVal(t))
			}
			c := pickRange(v, ShapeOf(v, opts), level, start, end)
			if c == nil {
				return "no compaction"
			}
			return fmt.Sprintf("L%d -> L%d\n", c.Level, c.OutputLevel) + formatCompaction(c, opts)

		case "choose":
			var tr Triggers[*manifest.FileMetadata]
			tr.IdleDue = d.HasArg("idle-due")
			tr.ReadsDue = d.HasArg("reads-due")
			if arg, ok := d.Arg("queue"); ok {
				for _, val := range arg.Vals {
					lv, num, ok := strings.Cut(val, ":")
					level, err1 := strconv.Atoi(lv)
					n, err2 := strconv.ParseUint(num, 10, 64)
					if !ok || err1 != nil || err2 != nil {
						d.Fatalf(t, "queue entry %q: want <level>:<file number>", val)
					}
					f := findFile(v, n)
					if f == nil {
						// A table compacted away since it was queued: a
						// stand-in the version does not hold.
						f = &manifest.FileMetadata{FileNum: n, Smallest: base.MakeInternalKey([]byte("?"), 1, base.KindSet), Largest: base.MakeInternalKey([]byte("?"), 1, base.KindSet)}
					}
					tr.ReadQueue = append(tr.ReadQueue, ReadCandidate[*manifest.FileMetadata]{Level: level, File: f})
				}
			}
			if arg, ok := d.Arg("manual"); ok {
				m := &Manual[*manifest.FileMetadata]{Alone: d.HasArg("alone")}
				var err error
				if m.Level, err = strconv.Atoi(arg.SingleVal(t)); err != nil {
					d.Fatalf(t, "manual=%s: want a level", arg.SingleVal(t))
				}
				if arg, ok := d.Arg("start"); ok {
					m.Start = []byte(arg.SingleVal(t))
				}
				if arg, ok := d.Arg("end"); ok {
					m.End = []byte(arg.SingleVal(t))
				}
				if arg, ok := d.Arg("stale"); ok {
					nums := []uint64{} // stale=() lists none
					for _, val := range arg.Vals {
						if val == "" {
							continue
						}
						n, err := strconv.ParseUint(val, 10, 64)
						if err != nil {
							d.Fatalf(t, "stale entry %q: want a file number", val)
						}
						nums = append(nums, n)
					}
					m.Stale = func(f *manifest.FileMetadata) bool { return slices.Contains(nums, f.FileNum) }
				}
				tr.Manual = m
			}
			ch := Choose(v, pointers, opts, tr)
			out := fmt.Sprintf("reason: %s; idle considered %v, declined %v; read queue used %d of %d\n",
				ch.Reason, ch.IdleConsidered, ch.IdleDeclined, ch.ReadQueueUsed, len(tr.ReadQueue))
			switch {
			case ch.Reason == ReasonStale:
				// Rewrites in place: no level below is merged, and the
				// engine never moves them trivially.
				for _, c := range ch.All() {
					out += fmt.Sprintf("L%d -> L%d: %s\n", c.Level, c.OutputLevel, fileNums(c.Inputs[0]))
				}
			case ch.Compaction != nil:
				out += fmt.Sprintf("L%d -> L%d\n", ch.Level, ch.OutputLevel) + formatCompaction(ch.Compaction, opts)
			}
			return out

		case "key-range":
			var nums []uint64
			d.ScanArgs(t, "files", &nums)
			var files []*manifest.FileMetadata
			for _, n := range nums {
				f := findFile(v, n)
				if f == nil {
					d.Fatalf(t, "file %d is not in the version", n)
				}
				files = append(files, f)
			}
			lo, hi := KeyRange(files)
			return fmt.Sprintf("%s - %s (%d bytes)", lo, hi, TotalSize(files))

		default:
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		}
	})
}

// parseVersion builds a version from lines naming a level ("L1") followed
// by that level's files, one per line:
//
//	<num>: <smallest>[-<largest>] [size=<bytes>] [seqs=<lo>-<hi>]
//
// Keys are <user key>#<seq>[,SET|,DEL] (SET when omitted); user keys must
// not hold '#', '-' or spaces; a file of one key gives it alone. size defaults to 100; seqs defaults to the
// range of the two keys' sequence numbers. The files go through
// manifest.Builder, so the version is sorted and checked as the engine's.
func parseVersion(input string) (*manifest.Version, error) {
	e := &manifest.VersionEdit{}
	level := -1
	for line := range strings.Lines(input) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if l, ok := strings.CutPrefix(strings.TrimSuffix(line, ":"), "L"); ok {
			n, err := strconv.Atoi(l)
			if err != nil {
				return nil, fmt.Errorf("bad level line %q", line)
			}
			level = n
			continue
		}
		if level < 0 {
			return nil, fmt.Errorf("file %q before any level line", line)
		}
		f, err := parseFile(line)
		if err != nil {
			return nil, err
		}
		e.NewFiles = append(e.NewFiles, manifest.NewFileEntry{Level: level, Meta: f})
	}
	b := manifest.NewBuilder(nil)
	if err := b.Apply(e); err != nil {
		return nil, err
	}
	return b.Finish()
}

func parseFile(line string) (*manifest.FileMetadata, error) {
	numStr, rest, ok := strings.Cut(line, ":")
	if !ok {
		return nil, fmt.Errorf("file line %q: want <num>: <smallest>-<largest>", line)
	}
	num, err := strconv.ParseUint(strings.TrimSpace(numStr), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("file line %q: %v", line, err)
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return nil, fmt.Errorf("file line %q: no key range", line)
	}
	lo, hi, ok := strings.Cut(fields[0], "-")
	if !ok {
		hi = lo // a file of one key
	}
	f := &manifest.FileMetadata{FileNum: num, Size: 100}
	var loSeq, hiSeq uint64
	if f.Smallest, loSeq, err = parseKey(lo); err != nil {
		return nil, err
	}
	if f.Largest, hiSeq, err = parseKey(hi); err != nil {
		return nil, err
	}
	f.SmallestSeq, f.LargestSeq = min(loSeq, hiSeq), max(loSeq, hiSeq)
	for _, kv := range fields[1:] {
		k, val, _ := strings.Cut(kv, "=")
		switch k {
		case "size":
			f.Size, err = strconv.ParseUint(val, 10, 64)
		case "seqs":
			a, b, _ := strings.Cut(val, "-")
			if f.SmallestSeq, err = strconv.ParseUint(a, 10, 64); err == nil {
				f.LargestSeq, err = strconv.ParseUint(b, 10, 64)
			}
		default:
			err = fmt.Errorf("unknown field %q", k)
		}
		if err != nil {
			return nil, fmt.Errorf("file line %q: %v", line, err)
		}
	}
	return f, nil
}

// parseKey parses <user key>#<seq>[,SET|,DEL].
func parseKey(s string) ([]byte, uint64, error) {
	ukey, trailer, ok := strings.Cut(s, "#")
	if !ok {
		return nil, 0, fmt.Errorf("key %q: want <user key>#<seq>", s)
	}
	seqStr, kindStr, _ := strings.Cut(trailer, ",")
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("key %q: %v", s, err)
	}
	kind := base.KindSet
	switch kindStr {
	case "", "SET":
	case "DEL":
		kind = base.KindDelete
	default:
		return nil, 0, fmt.Errorf("key %q: unknown kind %q", s, kindStr)
	}
	return base.MakeInternalKey([]byte(ukey), seq, kind), seq, nil
}

func formatVersion(v *manifest.Version) string {
	var b strings.Builder
	for l, files := range v.Levels {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&b, "L%d:\n", l)
		for _, f := range files {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	if b.Len() == 0 {
		return "empty version"
	}
	return b.String()
}

// formatCompaction prints the inputs, the grandparents and whether the
// compaction is a trivial move.
func formatCompaction(c *Compaction[*manifest.FileMetadata], o Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  inputs L%d: %s\n", c.Level, fileNums(c.Inputs[0]))
	fmt.Fprintf(&b, "  inputs L%d: %s\n", c.OutputLevel, fileNums(c.Inputs[1]))
	lo, hi := KeyRange(append(slices.Clone(c.Inputs[0]), c.Inputs[1]...))
	fmt.Fprintf(&b, "  span: %s - %s\n", lo, hi)
	if c.OutputLevel+1 < manifest.NumLevels {
		fmt.Fprintf(&b, "  grandparents L%d: %s (%d bytes)\n", c.OutputLevel+1, fileNums(c.Grandparents), TotalSize(c.Grandparents))
	} else {
		fmt.Fprintf(&b, "  grandparents: %s (output is the last level)\n", fileNums(c.Grandparents))
	}
	fmt.Fprintf(&b, "  trivial move: %t\n", c.IsTrivialMove(o))
	if o.DynamicLevelBytes {
		fmt.Fprintf(&b, "  base L%d: outputs split at %d\n", c.Base, c.TargetFileSize(o))
	}
	return b.String()
}

func fileNums(files []*manifest.FileMetadata) string {
	if len(files) == 0 {
		return "none"
	}
	s := make([]string, len(files))
	for i, f := range files {
		s[i] = fmt.Sprintf("%06d", f.FileNum)
	}
	return strings.Join(s, " ")
}

func formatPointers(p map[int][]byte) string {
	if len(p) == 0 {
		return "none\n"
	}
	var s []string
	for l := range manifest.NumLevels {
		if k, ok := p[l]; ok {
			s = append(s, fmt.Sprintf("L%d=%s", l, k))
		}
	}
	return strings.Join(s, " ") + "\n"
}

func findFile(v *manifest.Version, num uint64) *manifest.FileMetadata {
	for _, files := range v.Levels {
		for _, f := range files {
			if f.FileNum == num {
				return f
			}
		}
	}
	return nil
}
