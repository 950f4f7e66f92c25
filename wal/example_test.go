package wal_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// Write a log of records that each start with their sequence number, then
// check it and read back what a recovery keeps.
func Example() {
	fs := vfs.NewMem()
	f, err := fs.Create("000001.log")
	if err != nil {
		log.Fatal(err)
	}
	w := wal.NewWriter(f, wal.WriterOptions{Mode: wal.ModeWriteThrough})
	for seq, payload := range []string{"", "alpha", "beta", "gamma"} {
		if seq == 0 {
			continue // sequences start at 1
		}
		rec := binary.LittleEndian.AppendUint64(nil, uint64(seq))
		if err := w.Append(append(rec, payload...), false); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		log.Fatal(err)
	}
	size := w.Size()
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	// What a record means is the caller's: here, one write whose sequence
	// is the first 8 bytes.
	sequences := func(rec []byte) (first, count uint64, err error) {
		if len(rec) < 8 {
			return 0, 0, errors.New("short record")
		}
		return binary.LittleEndian.Uint64(rec), 1, nil
	}
	res, err := wal.Check(wal.Options{
		FS:              fs,
		Mode:            wal.TolerateTornTail,
		FlushedSeqKnown: true, // nothing is in tables: the log starts at 1
		SyncedSeq:       3,    // every write up to 3 must be found
		Sequences:       sequences,
	}, []wal.Log{{Num: 1, Path: "000001.log", Size: size}})
	if err != nil {
		log.Fatal(err)
	}
	lr := &res.Logs[0]
	fmt.Printf("%s: %d records, sequences %d-%d, %d bytes dropped\n",
		lr.Path, lr.Records, lr.FirstSeq, lr.LastSeq, res.DroppedBytes())
	err = wal.Replay(fs, lr, func(rec []byte) error {
		fmt.Printf("seq %d: %s\n", binary.LittleEndian.Uint64(rec), rec[8:])
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// 000001.log: 3 records, sequences 1-3, 0 bytes dropped
	// seq 1: alpha
	// seq 2: beta
	// seq 3: gamma
}

// A crash can cut the last record short. Check drops such a torn tail of
// the newest log, keeps every whole record before it, and says how many
// bytes it dropped.
func ExampleCheck_tornTail() {
	fs := vfs.NewMem()
	f, err := fs.Create("000007.log")
	if err != nil {
		log.Fatal(err)
	}
	w := wal.NewWriter(f, wal.WriterOptions{Mode: wal.ModeSync})
	for seq := uint64(1); seq <= 3; seq++ {
		rec := binary.LittleEndian.AppendUint64(nil, seq)
		if err := w.Append(append(rec, "payload"...), false); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	// The crash: only the first 40 of the 66 bytes reached the disk.
	written := make([]byte, w.Size())
	if f, err = fs.Open("000007.log"); err != nil {
		log.Fatal(err)
	}
	if _, err := f.ReadAt(written, 0); err != nil {
		log.Fatal(err)
	}
	f.Close()
	if f, err = fs.Create("000007.log"); err != nil {
		log.Fatal(err)
	}
	if _, err := f.Write(written[:40]); err != nil {
		log.Fatal(err)
	}
	f.Close()

	res, err := wal.Check(wal.Options{
		FS:              fs,
		FlushedSeqKnown: true,
		Sequences: func(rec []byte) (uint64, uint64, error) {
			return binary.LittleEndian.Uint64(rec), 1, nil
		},
	}, []wal.Log{{Num: 7, Path: "000007.log", Size: 40}})
	if err != nil {
		log.Fatal(err)
	}
	lr := res.Logs[0]
	fmt.Printf("%d bytes written, %d records kept, last sequence %d, torn tail %v, %d bytes dropped\n",
		len(written), lr.Records, res.LastSeq, lr.TornTail, lr.Dropped())
	// Output:
	// 66 bytes written, 1 records kept, last sequence 1, torn tail true, 18 bytes dropped
}
