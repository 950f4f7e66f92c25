package sstable

import (
	"bytes"
	"fmt"

	"github.com/bloomkv/bloomkv/kv"
)

// Identity is what the database's manifest says a table is. A table file
// replaced by another valid table -- an older copy, a table of another
// database, one renamed from another number -- reads without a checksum
// error, so the reader compares what the table says of itself with this.
type Identity struct {
	FileNum uint64
	Size    int64 // bytes: where the footer is
	// DBID is the database's identity; nil skips the check.
	DBID []byte
	// Smallest and Largest are the first and last internal keys; nil skips
	// the key and sequence checks.
	Smallest, Largest       []byte
	SmallestSeq, LargestSeq uint64
}

// CheckIdentity compares the table's properties with id. Any mismatch is an
// error wrapping ErrCorruption that names the file. A table written without
// a file number or database identity (by an older writer, or a test) is
// checked on its key and sequence ranges only.
func (r *Reader) CheckIdentity(id Identity) error {
	p := &r.props
	loc := location{r.name, kindProperties, r.footer.props.offset}
	smallest, largest, smallestSeq, largestSeq := r.Bounds()
	switch {
	case p.FileNum != 0 && p.FileNum != id.FileNum:
		return loc.corruptf("the table says it is file %06d, but it is opened as file %06d (a table put in another's place)", p.FileNum, id.FileNum)
	case len(p.DBID) > 0 && id.DBID != nil && !bytes.Equal(p.DBID, id.DBID):
		return loc.corruptf("the table belongs to database %q, not %q", p.DBID, id.DBID)
	case id.Smallest == nil:
		return nil
	case !bytes.Equal(smallest, id.Smallest) || !bytes.Equal(largest, id.Largest):
		return loc.corruptf("the table's keys %s differ from the manifest's %s",
			describeRange(smallest, largest), describeRange(id.Smallest, id.Largest))
	case smallestSeq != id.SmallestSeq || largestSeq != id.LargestSeq:
		return loc.corruptf("the table's sequences %d-%d differ from the manifest's %d-%d",
			smallestSeq, largestSeq, id.SmallestSeq, id.LargestSeq)
	}
	return nil
}

func describeRange(smallest, largest []byte) string {
	return fmt.Sprintf("[%s, %s]", kv.FormatInternalKey(smallest), kv.FormatInternalKey(largest))
}
