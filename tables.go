package bloomkv

import (
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// tableIdentity is what the manifest says table f is; the table cache
// checks every table it opens against it (and the database identity), so a
// table put in another's place is corruption, not stale data.
func tableIdentity(f *manifest.FileMetadata) sstable.Identity {
	return sstable.Identity{
		FileNum:     f.FileNum,
		Size:        int64(f.Size),
		Smallest:    f.Smallest,
		Largest:     f.Largest,
		SmallestSeq: f.SmallestSeq,
		LargestSeq:  f.LargestSeq,
	}
}

// findTable returns the open reader of table f from the table cache.
func findTable(tc *sstable.TableCache, f *manifest.FileMetadata) (*sstable.Reader, func(), error) {
	return tc.Find(tableIdentity(f))
}

// findTableAt is findTable for a Get: it takes its reference in slot (the
// slot of the Get's read-state reference, see sstable.TableCache.FindAt)
// and counts a table open it causes in stats, with its bytes.
func findTableAt(tc *sstable.TableCache, slot int, f *manifest.FileMetadata, stats *sstable.ReadStats) (*sstable.Reader, func(), error) {
	return tc.FindAt(slot, tableIdentity(f), stats)
}

// findTableStats is findTable for a read that counts its work in stats:
// a table open it causes is counted there, with its bytes.
func findTableStats(tc *sstable.TableCache, f *manifest.FileMetadata, stats *sstable.ReadStats) (*sstable.Reader, func(), error) {
	return tc.FindWithStats(tableIdentity(f), stats)
}
