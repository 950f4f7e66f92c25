package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/klauspost/crc32"
)

func TestSSTPrintsProperties(t *testing.T) {
	dir := cleanDB(t)
	for _, name := range filesOfType(t, dir, base.FileTypeTable) {
		path := filepath.Join(dir, name)
		code, out, errOut := runTool(t, "sst", path)
		if code != exitOK {
			t.Fatalf("%s: exit %d:\n%s%s", name, code, out, errOut)
		}
		r, err := openTable(vfs.Default, path)
		if err != nil {
			t.Fatal(err)
		}
		p := *r.Properties()
		r.Close()
		for _, want := range []string{
			"properties:", "format version         1",
			fmt.Sprintf("entries                %d (%d deletions)", p.NumEntries, p.NumDeletions),
			fmt.Sprintf("data blocks            %d", p.NumDataBlocks),
			// The filter in words, not "variant 1, ..., key \"\"".
			fmt.Sprintf("filter                 standard bloom filter, 10 bits/key configured, %d keys, over whole user keys", p.FilterKeyCount),
			"smallest   " + fmtKey(p.SmallestKey),
			"largest    " + fmtKey(p.LargestKey),
			"blocks:", "data block", "index block", "properties block", "footer",
			"filter:", "standard bloom filter", "false positives", "theory",
			fmt.Sprintf("every user key present (%d probed)", p.FilterKeyCount),
			"check: ok",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", name, want, out)
			}
		}
	}
}

// TestSSTBlockList checks -blocks against the table: one line per block,
// offsets tiling the file, and per-block entry counts summing to the
// table's entries.
func TestSSTBlockList(t *testing.T) {
	dir := cleanDB(t)
	tables := filesOfType(t, dir, base.FileTypeTable)
	path := filepath.Join(dir, tables[len(tables)-1])
	code, out, _ := runTool(t, "sst", "-blocks", path)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	r, err := openTable(vfs.Default, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	blocks, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^  (\d+)\s+(\d+)\s+(data block|filter block|index block|properties block|footer)\s+(\S+)\s+(\S+)`)
	rows := line.FindAllStringSubmatch(out, -1)
	if len(rows) != len(blocks) {
		t.Fatalf("%d block lines for %d blocks:\n%s", len(rows), len(blocks), out)
	}
	var entries uint64
	for i, m := range rows {
		off, _ := strconv.ParseUint(m[1], 10, 64)
		size, _ := strconv.ParseUint(m[2], 10, 64)
		if off != blocks[i].Offset || size != blocks[i].Size || m[3] != blocks[i].Kind.String() {
			t.Errorf("line %d: %q, block %+v", i, m[0], blocks[i])
		}
		if m[3] == "data block" {
			n, err := strconv.ParseUint(m[5], 10, 64)
			if err != nil || n == 0 {
				t.Errorf("data block line %q: entries %q", m[0], m[5])
			}
			entries += n
		}
	}
	if entries != r.Properties().NumEntries {
		t.Errorf("block lines count %d entries, the table holds %d", entries, r.Properties().NumEntries)
	}
}

func TestSSTDamaged(t *testing.T) {
	dir := cleanDB(t)
	name := filesOfType(t, dir, base.FileTypeTable)[0]
	path := filepath.Join(dir, name)

	xorByte(t, path, 3, 0x08) // inside the first data block
	code, out, _ := runTool(t, "sst", path)
	if code != exitProblems || !strings.Contains(out, "check: ERROR") || !strings.Contains(out, name) {
		t.Fatalf("damaged data block: exit %d:\n%s", code, out)
	}

	xorByte(t, path, fileSize(t, path)-1, 0x08) // the footer's magic
	code, out, errOut := runTool(t, "sst", path)
	if code != exitProblems || !strings.Contains(out, "bad magic") || !strings.Contains(errOut, "cannot be opened") {
		t.Fatalf("damaged footer: exit %d:\n%s%s", code, out, errOut)
	}

	code, _, _ = runTool(t, "sst", filepath.Join(dir, "no-such.sst"))
	if code != exitProblems {
		t.Fatalf("missing file: exit %d", code)
	}
}

// TestFilterFalseNegative rewrites a table's filter to all zeros with a
// valid checksum: every block still verifies, but the filter denies every
// key, so Gets would miss them. Both check and sst must catch it.
func TestFilterFalseNegative(t *testing.T) {
	dir := handDB(t, []handTable{{num: 4, level: 1, entries: []handEntry{{"a", 1}, {"b", 2}, {"c", 3}}}})
	path := filepath.Join(dir, "000004.sst")
	clearFilterBits(t, path)

	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("check: exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", "000004.sst", "filter block", "false negative")

	code, out, _ = runTool(t, "sst", path)
	if code != exitProblems || !strings.Contains(out, "ERROR: 3 of 3 user keys absent from the filter") {
		t.Fatalf("sst: exit %d:\n%s", code, out)
	}
}

// clearFilterBits zeroes the bit array of the table's filter block (keeping
// its 6-byte trailer of key count, k and variant) and rewrites the block's
// crc32c so that the damage passes every checksum.
func clearFilterBits(t *testing.T, path string) {
	t.Helper()
	r, err := openTable(vfs.Default, path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := r.Layout()
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if b.Kind != sstable.FilterBlock {
			continue
		}
		stored := data[b.Offset : b.Offset+b.Size]
		clear(stored[:len(stored)-6])
		typ := data[b.Offset+b.Size]
		c := crc32.Update(0, crc32.MakeTable(crc32.Castagnoli), stored)
		c = crc32.Update(c, crc32.MakeTable(crc32.Castagnoli), []byte{typ})
		binary.LittleEndian.PutUint32(data[b.Offset+b.Size+1:], c)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s has no filter block", path)
}

// TestSSTFilterDamage flips a bit of a filter block: its checksum fails.
func TestSSTFilterDamage(t *testing.T) {
	dir := handDB(t, []handTable{{num: 4, level: 1, entries: []handEntry{{"a", 1}, {"b", 2}}}})
	path := filepath.Join(dir, "000004.sst")
	r, err := openTable(vfs.Default, path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, _ := r.Layout()
	r.Close()
	for _, b := range blocks {
		if b.Kind == sstable.FilterBlock {
			xorByte(t, path, int64(b.Offset+1), 0x10)
		}
	}
	code, out, _ := runTool(t, "sst", path)
	if code != exitProblems || !strings.Contains(out, "filter block") || !strings.Contains(out, "checksum mismatch") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestExtractorFilters: tables whose filter indexes FilterKey(key) cannot
// have their membership verified without the extractor; check says so in
// one note and passes, sst says so in its filter section.
func TestExtractorFilters(t *testing.T) {
	shape := smallDB
	shape.opts.FilterKey = func(k []byte) []byte { return k[:min(len(k), 6)] }
	shape.opts.FilterKeyName = "prefix6"
	dir := buildDB(t, shape)
	code, out, _ := runTool(t, "check", dir)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "NOTE", "-", "filters built over a key extractor", "not verified")
	if !strings.Contains(out, `not verified (extractor "prefix6")`) {
		t.Errorf("table rows do not say the filter is unverified:\n%s", out)
	}
	name := filesOfType(t, dir, base.FileTypeTable)[0]
	code, out, _ = runTool(t, "sst", filepath.Join(dir, name))
	if code != exitOK || !strings.Contains(out, `keys from the extractor "prefix6"`) || !strings.Contains(out, "membership       not verified") {
		t.Fatalf("sst: exit %d:\n%s", code, out)
	}
}

func TestSSTNoFilter(t *testing.T) {
	shape := smallDB
	shape.opts.BloomBitsPerKey = -1
	dir := buildDB(t, shape)
	name := filesOfType(t, dir, base.FileTypeTable)[0]
	code, out, _ := runTool(t, "sst", filepath.Join(dir, name))
	if code != exitOK || !strings.Contains(out, "none (written with BloomBitsPerKey") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	code, out, _ = runTool(t, "check", dir)
	if code != exitOK || !strings.Contains(out, " none ") {
		t.Fatalf("check: exit %d:\n%s", code, out)
	}
}
