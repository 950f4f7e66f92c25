// Package vfs is the small file-system interface through which bloomkv does
// every file operation. Production code uses Default (the operating system);
// tests use the in-memory file system, which can simulate a crash by dropping
// everything not yet synced, and the error-injecting wrapper.
//
// # The implementations
//
//   - Default (os.go, lock_*.go): the operating system. Lock takes an
//     exclusive advisory lock (flock on Unix, LockFileEx on Windows) and
//     refuses a second holder in the same process too; a held lock is an
//     error wrapping ErrLocked, any other failure the OS error. On Windows a
//     directory cannot be synced, and its Sync does nothing.
//   - MemFS (mem.go): in memory, with a model of what survives a power loss
//     (CrashClone: synced bytes and synced directory entries only) and a
//     kill -9 (ProcessCrashClone: everything written). Its doc states the
//     durability model exactly.
//   - ErrorFS (errorfs.go): wraps an FS and fails chosen operations (the
//     N-th of a kind, matching paths, forever after, or a full disk); rules
//     may also run hooks that see every operation before it happens.
//   - SyncDir makes a directory's creates, renames and removes durable.
//
// # Invariants
//
//   - bloomkv never touches a file except through an FS, so a test that
//     swaps the FS sees, and can fail or lose, every write the engine makes.
//   - Files opened with Create are written sequentially from offset 0;
//     files opened with Open are read with ReadAt (safe concurrently) or Read.
//
// # Locks
//
// MemFS.mu guards its directory tree and lock table, each inode has its own
// lock for its bytes (MemFS.mu before an inode's); ErrorFS.mu guards its
// rules and is held while a rule's hook runs, so hooks see operations one at
// a time. Every FS is safe for concurrent use.
package vfs
