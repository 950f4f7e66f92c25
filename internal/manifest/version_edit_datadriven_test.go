package manifest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestVersionEditDataDriven runs testdata/version_edit: version edits
// written as text, then encoded, decoded, applied with a Builder, or
// replayed from a MANIFEST, with the results printed. The commands and the
// edit syntax are documented at the top of that file. Run with -rewrite to
// regenerate the expected outputs.
func TestVersionEditDataDriven(t *testing.T) {
	v := &Version{}
	datadriven.RunTest(t, "testdata/version_edit", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "reset":
			v = &Version{}
			return ddFormatVersion(v)

		case "apply":
			b := NewBuilder(v)
			var out strings.Builder
			for i, rec := range ddParseRecords(t, d) {
				if rec.edit == nil {
					d.Fatalf(t, "apply takes edits, not raw records")
				}
				if err := b.Apply(rec.edit); err != nil {
					fmt.Fprintf(&out, "edit %d: %v\n", i+1, err)
				}
			}
			nv, err := b.Finish()
			if err != nil {
				fmt.Fprintf(&out, "finish: %v\n", err)
				return out.String()
			}
			v = nv
			return out.String() + ddFormatVersion(v)

		case "encode":
			recs := ddParseRecords(t, d)
			if len(recs) != 1 || recs[0].edit == nil {
				d.Fatalf(t, "encode takes one edit")
			}
			e := recs[0].edit
			var out strings.Builder
			if err := e.Validate(); err != nil {
				fmt.Fprintf(&out, "validate: %v\n", err)
			}
			enc := e.Encode()
			out.WriteString(ddHexDump(enc))
			var got VersionEdit
			if err := got.Decode(enc); err != nil {
				fmt.Fprintf(&out, "decode: %v\n", err)
			} else if re := got.Encode(); !bytes.Equal(re, enc) {
				fmt.Fprintf(&out, "decode: re-encodes differently:\n%s", ddHexDump(re))
			} else {
				out.WriteString("decode: round trip ok\n")
			}
			return out.String()

		case "decode":
			b := ddParseHex(t, d, d.Input)
			var e VersionEdit
			if err := e.Decode(b); err != nil {
				return fmt.Sprintf("error: %v\ncorruption: %t", err, errors.Is(err, base.ErrCorruption))
			}
			return ddFormatEdit(&e)

		case "replay":
			// Write the records to a MANIFEST on an in-memory file system,
			// cut truncate=N bytes off its end, and replay it.
			fs := vfs.NewMem()
			const path = "/MANIFEST-000001"
			f, err := fs.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			w := record.NewWriter(f)
			var offsets []string
			for _, rec := range ddParseRecords(t, d) {
				data := rec.raw
				if rec.edit != nil {
					data = rec.edit.Encode()
				}
				off, err := w.AddRecord(data)
				if err != nil {
					t.Fatal(err)
				}
				offsets = append(offsets, strconv.FormatInt(off, 10))
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			out := "records at offsets: " + strings.Join(offsets, " ") + "\n"
			if len(offsets) == 0 {
				out = "no records\n"
			}
			var truncate int
			if d.MaybeScanArgs(t, "truncate", &truncate) {
				n := ddTruncate(t, fs, path, truncate)
				out += fmt.Sprintf("truncated to %d bytes\n", n)
			}
			s, err := ReadManifest(fs, path)
			if err != nil {
				return out + fmt.Sprintf("error: %v\n", err)
			}
			return out + ddFormatState(s)

		default:
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		}
	})
}

// ddRecord is one MANIFEST record of a test: an edit, or raw bytes.
type ddRecord struct {
	edit *VersionEdit
	raw  []byte
}

// ddParseRecords parses d.Input: edits separated by "edit" lines (the
// first "edit" line may be left out), and "raw <hex>" lines, each a record
// of those bytes.
func ddParseRecords(t *testing.T, d *datadriven.TestData) []ddRecord {
	var recs []ddRecord
	var cur *VersionEdit
	for line := range strings.Lines(d.Input) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case line == "edit":
			cur = &VersionEdit{}
			recs = append(recs, ddRecord{edit: cur})
			continue
		case strings.HasPrefix(line, "raw "):
			recs = append(recs, ddRecord{raw: ddParseHex(t, d, strings.TrimPrefix(line, "raw "))})
			cur = nil
			continue
		}
		if cur == nil {
			cur = &VersionEdit{}
			recs = append(recs, ddRecord{edit: cur})
		}
		if err := ddParseEditLine(cur, line); err != nil {
			d.Fatalf(t, "%s: %v", line, err)
		}
	}
	if len(recs) == 0 && d.Cmd != "replay" {
		recs = append(recs, ddRecord{edit: &VersionEdit{}}) // the empty edit
	}
	return recs
}

// ddParseEditLine adds one field to e:
//
//	log-num N | next-file-num N | last-seq N | flushed-seq N | synced-seq N
//	db-id <string> | foreign-file <name> | compact-pointer L<n> <key>
//	delete L<n> <num>
//	add L<n> <num>: <smallest>-<largest> [size=N] [seqs=<lo>-<hi>]
//
// Keys are <user key>#<seq>[,<kind>], kind SET (the default), DEL, SEEK or
// a number; a user key may be a Go quoted string. seqs defaults to the
// keys' sequence numbers, size to 100. A level may be out of range, to
// describe invalid edits.
func ddParseEditLine(e *VersionEdit, line string) error {
	field, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	u := func() (uint64, error) { return strconv.ParseUint(rest, 10, 64) }
	var err error
	switch field {
	case "log-num":
		e.HasLogNum = true
		e.LogNum, err = u()
	case "next-file-num":
		e.HasNextFileNum = true
		e.NextFileNum, err = u()
	case "last-seq":
		e.HasLastSeq = true
		e.LastSeq, err = u()
	case "flushed-seq":
		e.HasFlushedSeq = true
		e.FlushedSeq, err = u()
	case "synced-seq":
		e.HasSyncedSeq = true
		e.SyncedSeq, err = u()
	case "db-id":
		e.DBID, err = ddParseString(rest)
	case "foreign-file":
		var name []byte
		name, err = ddParseString(rest)
		e.ForeignFiles = append(e.ForeignFiles, string(name))
	case "compact-pointer":
		lv, key, _ := strings.Cut(rest, " ")
		var cp CompactPointer
		if cp.Level, err = ddParseLevel(lv); err == nil {
			cp.Key, err = ddParseString(key)
		}
		e.CompactPointers = append(e.CompactPointers, cp)
	case "delete":
		lv, num, _ := strings.Cut(rest, " ")
		var df DeletedFileEntry
		if df.Level, err = ddParseLevel(lv); err == nil {
			df.FileNum, err = strconv.ParseUint(num, 10, 64)
		}
		e.DeletedFiles = append(e.DeletedFiles, df)
	case "add":
		lv, f, _ := strings.Cut(rest, " ")
		var nf NewFileEntry
		if nf.Level, err = ddParseLevel(lv); err == nil {
			nf.Meta, err = ddParseFile(f)
		}
		e.NewFiles = append(e.NewFiles, nf)
	default:
		err = fmt.Errorf("unknown field %q", field)
	}
	return err
}

func ddParseLevel(s string) (int, error) {
	l, ok := strings.CutPrefix(s, "L")
	if !ok {
		return 0, fmt.Errorf("level %q: want L<n>", s)
	}
	return strconv.Atoi(l)
}

// ddParseString parses a bare word or a Go quoted string.
func ddParseString(s string) ([]byte, error) {
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		return []byte(u), err
	}
	return []byte(s), nil
}

// ddParseFile parses "<num>: <smallest>-<largest> [size=N] [seqs=<lo>-<hi>]".
func ddParseFile(s string) (*FileMetadata, error) {
	numStr, rest, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("file %q: want <num>: <smallest>-<largest>", s)
	}
	num, err := strconv.ParseUint(numStr, 10, 64)
	if err != nil {
		return nil, err
	}
	f := &FileMetadata{FileNum: num, Size: 100}
	rest = strings.TrimSpace(rest)
	var loSeq, hiSeq uint64
	if f.Smallest, loSeq, rest, err = ddParseKey(rest); err != nil {
		return nil, err
	}
	if rest, ok = strings.CutPrefix(rest, "-"); !ok {
		return nil, fmt.Errorf("file %q: want <smallest>-<largest>", s)
	}
	if f.Largest, hiSeq, rest, err = ddParseKey(rest); err != nil {
		return nil, err
	}
	f.SmallestSeq, f.LargestSeq = min(loSeq, hiSeq), max(loSeq, hiSeq)
	for _, kv := range strings.Fields(rest) {
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
			err = fmt.Errorf("unknown file field %q", k)
		}
		if err != nil {
			return nil, fmt.Errorf("file %q: %v", s, err)
		}
	}
	return f, nil
}

// ddParseKey parses an internal key at the start of s and returns the key,
// its sequence number and the rest of s.
func ddParseKey(s string) (key []byte, seq uint64, rest string, err error) {
	var ukey string
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return nil, 0, "", fmt.Errorf("key %q: %v", s, err)
		}
		ukey, _ = strconv.Unquote(q)
		s = s[len(q):]
	} else {
		i := strings.IndexByte(s, '#')
		if i < 0 {
			return nil, 0, "", fmt.Errorf("key %q: want <user key>#<seq>[,<kind>]", s)
		}
		ukey, s = s[:i], s[i:]
	}
	s, ok := strings.CutPrefix(s, "#")
	if !ok {
		return nil, 0, "", fmt.Errorf("key %q: want #<seq> after the user key", s)
	}
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if seq, err = strconv.ParseUint(s[:n], 10, 64); err != nil {
		return nil, 0, "", fmt.Errorf("key %q: %v", s, err)
	}
	s = s[n:]
	kind := base.KindSet
	if k, ok := strings.CutPrefix(s, ","); ok {
		n := 0
		for n < len(k) && (k[n] >= 'A' && k[n] <= 'Z' || k[n] >= '0' && k[n] <= '9') {
			n++
		}
		switch name := k[:n]; name {
		case "SET":
		case "DEL":
			kind = base.KindDelete
		case "SEEK":
			kind = base.KindSeek
		default:
			v, err := strconv.ParseUint(name, 10, 8)
			if err != nil {
				return nil, 0, "", fmt.Errorf("kind %q: want SET, DEL, SEEK or a number", name)
			}
			kind = base.Kind(v)
		}
		s = k[n:]
	}
	return base.MakeInternalKey([]byte(ukey), seq, kind), seq, s, nil
}

// ddParseHex parses hex bytes separated by spaces or not; "#" starts a
// comment that runs to the end of its line.
func ddParseHex(t *testing.T, d *datadriven.TestData, s string) []byte {
	var digits strings.Builder
	for line := range strings.Lines(s) {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		d.Fatalf(t, "hex: %v", err)
	}
	return b
}

// ddHexDump prints b 16 bytes a line, each line led by its decimal offset
// (the offsets decode errors give).
func ddHexDump(b []byte) string {
	if len(b) == 0 {
		return "(0 bytes)\n"
	}
	var out strings.Builder
	for off := 0; off < len(b); off += 16 {
		row := b[off:min(off+16, len(b))]
		fmt.Fprintf(&out, "%3d: % x\n", off, row)
	}
	return out.String()
}

// ddFormatEdit prints e in the syntax ddParseEditLine reads, fields in the
// encoder's order.
func ddFormatEdit(e *VersionEdit) string {
	var out strings.Builder
	if e.HasLogNum {
		fmt.Fprintf(&out, "log-num %d\n", e.LogNum)
	}
	if e.HasNextFileNum {
		fmt.Fprintf(&out, "next-file-num %d\n", e.NextFileNum)
	}
	if e.HasLastSeq {
		fmt.Fprintf(&out, "last-seq %d\n", e.LastSeq)
	}
	if e.HasFlushedSeq {
		fmt.Fprintf(&out, "flushed-seq %d\n", e.FlushedSeq)
	}
	if e.HasSyncedSeq {
		fmt.Fprintf(&out, "synced-seq %d\n", e.SyncedSeq)
	}
	if e.DBID != nil {
		fmt.Fprintf(&out, "db-id %q\n", e.DBID)
	}
	for _, name := range e.ForeignFiles {
		fmt.Fprintf(&out, "foreign-file %q\n", name)
	}
	for _, cp := range e.CompactPointers {
		fmt.Fprintf(&out, "compact-pointer L%d %q\n", cp.Level, cp.Key)
	}
	for _, df := range e.DeletedFiles {
		fmt.Fprintf(&out, "delete L%d %d\n", df.Level, df.FileNum)
	}
	for _, nf := range e.NewFiles {
		m := nf.Meta
		fmt.Fprintf(&out, "add L%d %d: %s-%s size=%d seqs=%d-%d\n", nf.Level, m.FileNum,
			base.FormatInternalKey(m.Smallest), base.FormatInternalKey(m.Largest), m.Size, m.SmallestSeq, m.LargestSeq)
	}
	if out.Len() == 0 {
		return "empty edit\n"
	}
	return out.String()
}

func ddFormatVersion(v *Version) string {
	var out strings.Builder
	for l, files := range v.Levels {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&out, "L%d:\n", l)
		for _, f := range files {
			fmt.Fprintf(&out, "  %s\n", f)
		}
	}
	if out.Len() == 0 {
		return "empty version\n"
	}
	return out.String()
}

func ddFormatState(s *State) string {
	var out strings.Builder
	fmt.Fprintf(&out, "log-num %d, next-file-num %d, last-seq %d\n", s.LogNum, s.NextFileNum, s.LastSeq)
	flushed := "unset"
	if s.HasFlushedSeq {
		flushed = strconv.FormatUint(s.FlushedSeq, 10)
	}
	fmt.Fprintf(&out, "flushed-seq %s, synced-seq %d\n", flushed, s.SyncedSeq)
	if s.DBID != nil {
		fmt.Fprintf(&out, "db-id %q\n", s.DBID)
	}
	if len(s.ForeignFiles) > 0 {
		fmt.Fprintf(&out, "foreign files %q\n", s.ForeignFiles)
	}
	if len(s.CompactPointers) > 0 {
		out.WriteString("compact pointers:")
		for l := range NumLevels {
			if k, ok := s.CompactPointers[l]; ok {
				fmt.Fprintf(&out, " L%d %q", l, k)
			}
		}
		out.WriteString("\n")
	}
	out.WriteString(ddFormatVersion(s.Version))
	return out.String()
}

// ddTruncate cuts n bytes off the end of the file at path and returns its
// new size.
func ddTruncate(t *testing.T, fs *vfs.MemFS, path string, n int) int {
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	data := buf.Bytes()[:max(0, buf.Len()-n)]
	w, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return len(data)
}
