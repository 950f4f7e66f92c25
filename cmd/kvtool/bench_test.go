package main

import (
	"path/filepath"
	"testing"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// benchDB is a database of about 3 MiB: 30000 keys in several levels.
var benchDB = dbShape{keys: 30000, unflushed: 2000, opts: bloomkv.Options{MemtableSize: 256 << 10}}

// BenchmarkCheck measures a whole check: every table read twice (the
// table check and the read-order scan), the logs and the manifest.
func BenchmarkCheck(b *testing.B) {
	dir := buildDB(b, benchDB)
	var entries uint64
	b.ReportAllocs()
	for b.Loop() {
		rep := check(vfs.Default, dir)
		if rep.Errors != 0 {
			b.Fatalf("%d errors: %+v", rep.Errors, rep.Findings)
		}
		entries = rep.Order.Entries
	}
	b.ReportMetric(float64(entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkReadOrder measures the cross-table merge alone.
func BenchmarkReadOrder(b *testing.B) {
	dir := buildDB(b, benchDB)
	name := filesOfType(b, dir, base.FileTypeManifest)[0]
	var rep checkReport
	state, _ := loadManifest(vfs.Default, dir, &dirListing{}, &rep, &findings{})
	if state == nil {
		b.Fatalf("cannot read %s", name)
	}
	var st orderStats
	b.ReportAllocs()
	for b.Loop() {
		var out findings
		st = checkReadOrder(vfs.Default, dir, state.Version, nil, &out)
		if len(out.list) != 0 {
			b.Fatal(out.list)
		}
	}
	b.ReportMetric(float64(st.Entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkDescribeTable measures kvtool sst on the largest table:
// layout, one scan, the false-positive measurement and the full check.
func BenchmarkDescribeTable(b *testing.B) {
	dir := buildDB(b, benchDB)
	var path string
	var size int64
	for _, name := range filesOfType(b, dir, base.FileTypeTable) {
		if s := fileSize(b, filepath.Join(dir, name)); s > size {
			path, size = filepath.Join(dir, name), s
		}
	}
	r, err := openTable(vfs.Default, path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if !describeTable(discard{}, r, true) {
			b.Fatal("table has problems")
		}
	}
}

func BenchmarkDecodeBatch(b *testing.B) {
	var ops []testBatchOp
	for i := 0; i < 100; i++ {
		ops = append(ops, testBatchOp{key: string(testKey(i)), value: string(testValue(i, 0))})
	}
	rec := encodeBatch(1, ops)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeBatch(rec, "b.log", 0); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
