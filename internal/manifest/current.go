package manifest

import (
	"fmt"
	"io"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// maxCurrentSize bounds what ReadCurrent reads: a valid CURRENT is
// "MANIFEST-" + at most 20 digits + "\n".
const maxCurrentSize = 64

// ReadCurrent returns the manifest file name (base name) that CURRENT names
// in dir. A missing CURRENT is the file system's error (errors.Is
// os.ErrNotExist holds); a CURRENT that does not hold exactly
// "MANIFEST-<digits>\n" is ErrCorruption.
func ReadCurrent(fs vfs.FS, dir string) (string, error) {
	path := fs.PathJoin(dir, base.MakeFilename(base.FileTypeCurrent, 0))
	f, err := fs.Open(path)
	if err != nil {
		return "", fmt.Errorf("bloomkv/manifest: open %s: %w", path, err)
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, maxCurrentSize+1))
	if err != nil {
		return "", fmt.Errorf("bloomkv/manifest: read %s: %w", path, err)
	}
	return parseCurrent(content, path)
}

// parseCurrent checks the content of CURRENT and returns the manifest name.
func parseCurrent(content []byte, path string) (string, error) {
	if len(content) > maxCurrentSize {
		return "", base.CorruptionErrorf("bloomkv/manifest: %s at offset 0: longer than %d bytes", path, maxCurrentSize)
	}
	n := len(content)
	if n == 0 || content[n-1] != '\n' {
		return "", base.CorruptionErrorf("bloomkv/manifest: %s at offset %d: missing final newline", path, n)
	}
	name := string(content[:n-1])
	const prefix = "MANIFEST-"
	if len(name) <= len(prefix) || name[:len(prefix)] != prefix {
		return "", base.CorruptionErrorf("bloomkv/manifest: %s at offset 0: %q is not a manifest name", path, name)
	}
	for i := len(prefix); i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return "", base.CorruptionErrorf("bloomkv/manifest: %s at offset %d: %q is not a manifest name", path, i, name)
		}
	}
	if t, _, ok := base.ParseFilename(name); !ok || t != base.FileTypeManifest {
		return "", base.CorruptionErrorf("bloomkv/manifest: %s at offset 0: %q: manifest number out of range", path, name)
	}
	return name, nil
}

// SetCurrent atomically points CURRENT at MANIFEST-<num>: it writes a temp
// file, fsyncs it, renames it over CURRENT and fsyncs the directory. A crash
// at any point leaves CURRENT naming either the old or the new manifest.
func SetCurrent(fs vfs.FS, dir string, manifestNum uint64) (err error) {
	tmp := fs.PathJoin(dir, base.MakeFilename(base.FileTypeTemp, manifestNum))
	current := fs.PathJoin(dir, base.MakeFilename(base.FileTypeCurrent, 0))
	content := base.MakeFilename(base.FileTypeManifest, manifestNum) + "\n"
	defer func() {
		if err != nil {
			_ = fs.Remove(tmp) // best effort; a stray .tmp is never live
			err = fmt.Errorf("bloomkv/manifest: set %s to %q: %w", current, content[:len(content)-1], err)
		}
	}()
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(content)); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, current); err != nil {
		return err
	}
	return vfs.SyncDir(fs, dir)
}
