package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// SyncDir makes the creates, renames and removes in dir durable by syncing
// the directory itself: a new file's data may be synced, yet after a power
// loss its name is gone unless its directory was synced too.
func SyncDir(fs FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// LinkOrCopy makes dst a hard link to src, or, when fs cannot link them
// (different file systems, no hard links), a copy of src that is synced
// before it returns. It reports whether it copied. A missing src or an
// existing dst is an error either way; a failed copy removes its partial
// dst. For immutable files only: a link shares later changes, a copy not.
func LinkOrCopy(fs FS, src, dst string) (copied bool, err error) {
	err = fs.Link(src, dst)
	if err == nil || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrExist) {
		return false, err
	}
	if _, serr := fs.Stat(dst); serr == nil {
		return false, fmt.Errorf("bloomkv/vfs: copy %s to %s: %w", src, dst, os.ErrExist)
	}
	if err := copyFile(fs, src, dst); err != nil {
		_ = fs.Remove(dst)
		return true, fmt.Errorf("bloomkv/vfs: link %s to %s failed, and so did the copy: %w", src, dst, err)
	}
	return true, nil
}

func copyFile(fs FS, src, dst string) error {
	in, err := fs.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fs.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
