package main

import (
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// Table statuses in reports.
const (
	statusOK      = "ok"
	statusCorrupt = "corrupt"
	statusMissing = "missing"
	statusOrphan  = "orphan"
	statusForeign = "foreign" // not the engine's: never read, never touched
)

// tableResult is what check learned about one table.
type tableResult struct {
	File    string `json:"file"`
	FileNum uint64 `json:"file_num"`
	// Level is the table's level in the manifest; nil for a table the
	// manifest does not list (or when the manifest could not be read).
	Level      *int    `json:"level"`
	Size       int64   `json:"size"`
	Entries    uint64  `json:"entries"`
	Deletions  uint64  `json:"deletions"`
	DataBlocks uint64  `json:"data_blocks"`
	Smallest   string  `json:"smallest,omitempty"`
	Largest    string  `json:"largest,omitempty"`
	Filter     string  `json:"filter,omitempty"`
	BitsPerKey float64 `json:"filter_bits_per_key,omitempty"`
	Status     string  `json:"status"`
	Error      string  `json:"error,omitempty"`
}

// Filter verification outcomes (tableResult.Filter).
const (
	filterVerified     = "verified"
	filterNone         = "none"
	filterUnverifiable = "not verified"
	filterUnchecked    = "unchecked" // the table is damaged
)

// tableContents is what verifying a table's bytes yields.
type tableContents struct {
	props       sstable.Properties
	filter      string
	bitsPerKey  float64
	identityErr error
}

// verifyTable opens the table read-only and runs sstable's full check:
// every block checksum, the encoding, key order, index separators, the
// properties recounted, and that the filter holds every key. Filters built
// over a key extractor cannot be probed without it (kvtool does not know
// the engine's extractor); they are reported as not verified.
//
// With id, the table's identity is compared with it too
// (sstable.Reader.CheckIdentity: the file number and database identity its
// properties record, and its key and sequence ranges); a mismatch is
// tableContents.identityErr, apart from damage.
func verifyTable(fs vfs.FS, path string, num uint64, size int64, id *sstable.Identity) (tableContents, error) {
	f, err := fs.Open(path)
	if err != nil {
		return tableContents{}, fmt.Errorf("kvtool: open %s: %w", path, err)
	}
	r, err := sstable.Open(f, path, num, size, sstable.ReaderOptions{})
	if err != nil {
		return tableContents{}, err // Open closed f
	}
	defer r.Close()
	c := tableContents{props: *r.Properties(), filter: filterNone}
	if fs, ok, err := r.FilterSummary(); err != nil {
		return tableContents{}, err
	} else if ok {
		c.bitsPerKey = fs.BitsPerKey()
		if r.FilterUsable() {
			c.filter = filterVerified
		} else {
			c.filter = fmt.Sprintf("%s (extractor %q)", filterUnverifiable, c.props.FilterKeyName)
		}
	}
	if err := r.Check(); err != nil {
		// Check stops at the first damage, so membership is unknown.
		c.filter = filterUnchecked
		return c, err
	}
	if id != nil {
		c.identityErr = r.CheckIdentity(*id)
	}
	return c, nil
}

// checkLiveTable verifies one table the manifest lists, against the file
// on disk and the manifest's record of it.
// dbid is the manifest's database identity (nil: not checked).
func checkLiveTable(fs vfs.FS, dir string, level int, m *manifest.FileMetadata, onDisk dirFile, present bool, dbid []byte, out *findings) tableResult {
	name := base.MakeFilename(base.FileTypeTable, m.FileNum)
	lvl := level
	res := tableResult{
		File: name, FileNum: m.FileNum, Level: &lvl, Size: int64(m.Size),
		Smallest: fmtKey(m.Smallest), Largest: fmtKey(m.Largest),
	}
	if !present {
		res.Status = statusMissing
		res.Error = fmt.Sprintf("missing: the manifest lists it at level %d (%d bytes), but it is not in the directory", level, m.Size)
		out.errorf(name, "%s", res.Error)
		return res
	}
	res.Status = statusOK
	corrupt := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if res.Status == statusOK {
			res.Status, res.Error = statusCorrupt, msg
		}
		out.errorf(name, "%s", msg)
	}
	if onDisk.size != int64(m.Size) {
		corrupt("size mismatch: the manifest records %d bytes, the file has %d", m.Size, onDisk.size)
	}
	id := &sstable.Identity{
		FileNum: m.FileNum, DBID: dbid,
		Smallest: m.Smallest, Largest: m.Largest, SmallestSeq: m.SmallestSeq, LargestSeq: m.LargestSeq,
	}
	c, err := verifyTable(fs, fs.PathJoin(dir, name), m.FileNum, onDisk.size, id)
	res.Entries, res.Deletions, res.DataBlocks = c.props.NumEntries, c.props.NumDeletions, c.props.NumDataBlocks
	res.Filter, res.BitsPerKey = c.filter, c.bitsPerKey
	if err != nil {
		corrupt("%v", err)
		return res
	}
	if c.identityErr != nil {
		corrupt("not the table the manifest lists: %v", c.identityErr)
	}
	return res
}

// checkLooseTable verifies a table no readable manifest vouches for, on
// its own: used for every table when the manifest cannot be read.
func checkLooseTable(fs vfs.FS, dir string, f dirFile, out *findings) tableResult {
	res := tableResult{File: f.name, FileNum: f.num, Size: f.size, Status: statusOK}
	c, err := verifyTable(fs, fs.PathJoin(dir, f.name), f.num, f.size, &sstable.Identity{FileNum: f.num})
	res.Entries, res.Deletions, res.DataBlocks = c.props.NumEntries, c.props.NumDeletions, c.props.NumDataBlocks
	res.Filter, res.BitsPerKey = c.filter, c.bitsPerKey
	if c.props.NumEntries > 0 {
		res.Smallest, res.Largest = fmtKey(c.props.SmallestKey), fmtKey(c.props.LargestKey)
	}
	if err == nil && c.identityErr != nil {
		err = fmt.Errorf("not the table its name says: %w", c.identityErr)
	}
	if err != nil {
		res.Status, res.Error = statusCorrupt, err.Error()
		out.errorf(f.name, "%v", err)
	}
	return res
}

// orphanResult reports a table the manifest does not list, saying as much
// as the history knows about it. reserving says the manifest records a
// database identity, so the engine reserved every number it used in the
// manifest first (a table numbered past nextFileNum is then foreign, and
// never reaches here).
func orphanResult(f dirFile, ev fileEvent, known bool, nextFileNum uint64, reserving bool, manifestName string, out *findings) tableResult {
	res := tableResult{File: f.name, FileNum: f.num, Size: f.size, Status: statusOrphan}
	var why string
	switch {
	case known && ev.deleted > 0:
		why = fmt.Sprintf("deleted from level %d by edit %d of %s but not yet removed", ev.level, ev.deleted, manifestName)
	case f.num >= nextFileNum:
		why = fmt.Sprintf("numbered at or after the manifest's next file number %d: left by an interrupted flush or compaction", nextFileNum)
	case reserving && !known:
		why = "its number was reserved but no edit ever added it: left by an interrupted flush or compaction"
	default:
		why = "not in the manifest"
	}
	res.Error = fmt.Sprintf("orphaned table (%d bytes): %s; the next Open deletes it", f.size, why)
	out.warnf(f.name, "%s", res.Error)
	return res
}
