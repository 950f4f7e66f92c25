package bloomkv

import "github.com/bloomkv/bloomkv/wal"

// WALMode says how far a write gets before Write returns: the durability
// every write buys, and what it costs. WriteOptions.Sync asks for more, per
// write. Package wal holds the log writer that implements the modes.
type WALMode = wal.Mode

const (
	// WALWriteThrough (the default): each write reaches the operating
	// system (no fsync) before it returns, so it survives a crash of the
	// process (kill -9); with the machine it may be lost. On 64-bit Linux
	// the write is copied into a shared memory map of the log, elsewhere
	// (or with Options.DisableMmap) handed over with one write call.
	WALWriteThrough = wal.ModeWriteThrough
	// WALBuffered: writes wait in memory and reach the operating system
	// within Options.WALBufferedDelay (or once 64 KiB wait). A crash of the
	// process may lose the writes of that window -- the newest ones; what
	// recovery finds is always a prefix of what was acknowledged, never a
	// hole. Flush, Close and SyncWAL write and fsync everything.
	WALBuffered = wal.ModeBuffered
	// WALSync: each write is fsynced before it returns (group commit shares
	// one fsync among concurrent writers), so it survives losing the
	// operating system. Options.Sync = true means this mode.
	WALSync = wal.ModeSync
	// WALDisabled: no log. Writes since the last Flush die with the process
	// (recovery then holds exactly the flushed writes, a prefix); Close
	// flushes them.
	WALDisabled = wal.ModeDisabled
)

// walWriterOptions configures each log the database writes.
func (db *DB) walWriterOptions() wal.WriterOptions {
	return wal.WriterOptions{Mode: db.opts.WALMode, BufferedDelay: db.opts.WALBufferedDelay, MapLog: !db.opts.DisableMmap}
}
