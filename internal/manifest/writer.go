package manifest

import (
	"fmt"

	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// Writer appends version edits to a MANIFEST file, each one synced before
// WriteEdit returns. It is not safe for concurrent use.
type Writer struct {
	w    *record.Writer // constant after construction
	path string         // constant after construction
}

// CreateManifest creates a new manifest at path holding the snapshot of s,
// synced. The caller then points CURRENT at it with SetCurrent.
func CreateManifest(fs vfs.FS, path string, s *ManifestState) (*Writer, error) {
	f, err := fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bloomkv/manifest: create %s: %w", path, err)
	}
	w := &Writer{w: record.NewWriter(f), path: path}
	if err := w.WriteEdit(SnapshotEdit(s)); err != nil {
		_ = w.Close()
		return nil, err
	}
	return w, nil
}

// WriteEdit validates e, appends it and syncs the file. When it returns
// nil the edit survives a crash of the operating system.
func (w *Writer) WriteEdit(e *VersionEdit) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if _, err := w.w.AddRecord(e.Encode()); err != nil {
		return fmt.Errorf("bloomkv/manifest: %s: %w", w.path, err)
	}
	if err := w.w.Sync(); err != nil {
		return fmt.Errorf("bloomkv/manifest: %s: %w", w.path, err)
	}
	return nil
}

// Size returns the manifest's size in bytes, for deciding when to start a
// new one.
func (w *Writer) Size() int64 { return w.w.Size() }

// Close closes the file (every edit written was already synced).
func (w *Writer) Close() error { return w.w.Close() }
