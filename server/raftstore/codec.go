package raftstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/bloomkv/bloomkv"
	"github.com/hashicorp/raft"
)

// logVersion is the first byte of every log entry value (see doc.go).
const logVersion = 1

// logHeaderLen is the fixed part of a value: version, type, term, time.
const logHeaderLen = 18

// MaxData is the most Data a log entry without Extensions may carry (raft's
// Apply sets none): the entry is one bloomkv value of logHeaderLen bytes,
// one byte of extensions length and the data, and bloomkv refuses values
// past bloomkv.MaxValueSize. A longer entry fails StoreLogs, which makes a
// raft leader step down, so callers refuse such data before it reaches
// raft.
const MaxData = bloomkv.MaxValueSize - logHeaderLen - 1

// zeroTime encodes the zero time.Time, whose UnixNano is undefined.
const zeroTime = math.MinInt64

// encodeLog appends l's value encoding (doc.go) to dst.
func encodeLog(dst []byte, l *raft.Log) []byte {
	dst = append(dst, logVersion, byte(l.Type))
	dst = binary.LittleEndian.AppendUint64(dst, l.Term)
	at := int64(zeroTime)
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	dst = binary.LittleEndian.AppendUint64(dst, uint64(at))
	dst = binary.AppendUvarint(dst, uint64(len(l.Extensions)))
	dst = append(dst, l.Extensions...)
	return append(dst, l.Data...)
}

// decodeLog fills every field of l but Index from v, which it keeps
// references into (GetLog's v is a copy the caller owns).
func decodeLog(v []byte, l *raft.Log) error {
	if len(v) < logHeaderLen {
		return fmt.Errorf("%w: raftstore: value of %d bytes is shorter than the %d-byte header", bloomkv.ErrCorruption, len(v), logHeaderLen)
	}
	if v[0] != logVersion {
		return fmt.Errorf("%w: raftstore: value has format version %d, want %d", bloomkv.ErrCorruption, v[0], logVersion)
	}
	l.Type = raft.LogType(v[1])
	l.Term = binary.LittleEndian.Uint64(v[2:])
	l.AppendedAt = time.Time{}
	if at := int64(binary.LittleEndian.Uint64(v[10:])); at != zeroTime {
		l.AppendedAt = time.Unix(0, at)
	}
	n, w := binary.Uvarint(v[logHeaderLen:])
	rest := v[logHeaderLen:]
	if w <= 0 || n > uint64(len(rest)-w) {
		return fmt.Errorf("%w: raftstore: bad extensions length at offset %d", bloomkv.ErrCorruption, logHeaderLen)
	}
	l.Extensions = nil
	if n > 0 {
		l.Extensions = rest[w : w+int(n)]
	}
	l.Data = nil
	if d := rest[w+int(n):]; len(d) > 0 {
		l.Data = d
	}
	return nil
}
