package main

import (
	"fmt"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/batchrep"
)

// A write-ahead log record is one write batch. Package internal/batchrep
// owns its encoding (the byte layout is in its doc) and the decoder, which
// the engine uses too: so kvtool and Open cannot disagree on what a
// record holds. The limits are the engine's.
var batchLimits = batchrep.Limits{MaxKey: bloomkv.MaxKeySize, MaxValue: bloomkv.MaxValueSize}

// batchSummary is what checking a batch learns.
type batchSummary struct {
	seq     uint64 // sequence of the first operation
	count   uint32 // operations
	deletes uint32
}

// decodeBatch checks one log record as a write batch. Damage is an error
// wrapping base.ErrCorruption naming the log file, the record's offset in
// it and (the decoder's *batchrep.CorruptionError) the byte inside the
// record.
func decodeBatch(rec []byte, file string, recOff int64) (batchSummary, error) {
	var s batchSummary
	r := batchrep.NewReader(rec, batchLimits)
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		if op.Kind == base.KindDelete {
			s.deletes++
		}
	}
	if err := r.Err(); err != nil {
		return batchSummary{}, fmt.Errorf("kvtool: %s: record at offset %d: %w", file, recOff, err)
	}
	s.seq, s.count = batchrep.Seq(rec), batchrep.Count(rec)
	return s, nil
}

// batchSequences tells wal.Check the sequences a log record holds, once it
// decodes as a batch.
func batchSequences(rec []byte) (first, count uint64, err error) {
	seq, n, err := batchrep.Validate(rec, batchLimits)
	return seq, uint64(n), err
}
