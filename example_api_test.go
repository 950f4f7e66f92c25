package bloomkv_test

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/bloomkv/bloomkv"
)

// Checkpoint copies a database while it stays open: tables are hard
// links, and the copy opens like any database.
func ExampleDB_Checkpoint() {
	root, _ := os.MkdirTemp("", "bloomkv-example")
	defer os.RemoveAll(root)
	db, err := bloomkv.Open(filepath.Join(root, "db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("k"), []byte("before")); err != nil {
		log.Fatal(err)
	}
	backup := filepath.Join(root, "backup")
	if err := db.Checkpoint(backup); err != nil {
		log.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("after")); err != nil { // not in the copy
		log.Fatal(err)
	}

	cp, err := bloomkv.Open(backup, &bloomkv.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	v, _ := cp.Get([]byte("k"))
	fmt.Printf("copy: %s\n", v)
	// Output: copy: before
}

// A read-only open writes nothing to the directory (it may be read-only
// itself) and shares it with other read-only opens; writes are refused.
func ExampleOptions_readOnly() {
	dir, _ := os.MkdirTemp("", "bloomkv-example")
	defer os.RemoveAll(dir)
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		log.Fatal(err)
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}

	ro, err := bloomkv.Open(dir, &bloomkv.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ro.Close()
	v, _ := ro.Get([]byte("k"))
	fmt.Printf("%s\n", v)
	fmt.Println(errors.Is(ro.Put([]byte("k"), []byte("w")), bloomkv.ErrReadOnly))

	// ErrorIfNotExists (implied by ReadOnly) refuses to create a database.
	_, err = bloomkv.Open(filepath.Join(dir, "missing"), &bloomkv.Options{ErrorIfNotExists: true})
	fmt.Println(errors.Is(err, os.ErrNotExist))
	// Output:
	// v
	// true
	// true
}

// Options.Logger gets what the engine has to report: nothing on the happy
// path; here, the torn tail of a log that recovery drops (as after a crash
// in the middle of a write).
func ExampleOptions_logger() {
	dir, _ := os.MkdirTemp("", "bloomkv-example")
	defer os.RemoveAll(dir)
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey:
				return slog.Attr{} // reproducible output
			case "log":
				return slog.String("log", filepath.Base(a.Value.String()))
			}
			return a
		},
	}))
	db, err := bloomkv.Open(dir, &bloomkv.Options{Logger: logger})
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		log.Fatal(err)
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	// Half a record at the end of the log, as a crash mid-write leaves.
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	f, _ := os.OpenFile(logs[len(logs)-1], os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0x0b, 0x01})
	f.Close()

	db, err = bloomkv.Open(dir, &bloomkv.Options{Logger: logger})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	v, _ := db.Get([]byte("k"))
	fmt.Printf("k = %s\n", v)
	// Output:
	// level=INFO msg="bloomkv: dropped the torn tail of the newest log" log=000003.log offset=24 bytes=7
	// k = v
}

// Compression per level: snappy where tables are rewritten often, zstd in
// the levels that hold most of the data. Every block says how it is
// stored, so changing the setting later leaves old tables readable.
func ExampleOptions_levelCompression() {
	dir, _ := os.MkdirTemp("", "bloomkv-example")
	defer os.RemoveAll(dir)
	db, err := bloomkv.Open(dir, &bloomkv.Options{
		LevelCompression: []bloomkv.Compression{
			bloomkv.SnappyCompression, // level 0 (flushes)
			bloomkv.SnappyCompression, // level 1
			bloomkv.ZstdCompression,   // level 2 and below
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for i := range 1000 {
		if err := db.Put(fmt.Appendf(nil, "key%04d", i), fmt.Appendf(nil, "value %d", i)); err != nil {
			log.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		log.Fatal(err)
	}
	v, _ := db.Get([]byte("key0042"))
	fmt.Printf("%s, %v\n", v, bloomkv.ZstdCompression)
	// Output: value 42, zstd
}
