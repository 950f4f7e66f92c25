package vfs

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
