package bloomkv

// writeCause says on whose behalf the engine writes a table or a manifest
// edit. Test hooks use it to attribute file-system operations to a part of
// the engine (a flush, a compaction, ...) without guessing.
type writeCause int

const (
	causeRecovery   writeCause = iota // Open replaying logs, starting a manifest
	causeFlush                        // a memtable flush
	causeCompaction                   // a compaction or a trivial move
	causeLogSwitch                    // a memtable switch starting a new log
	causeClose                        // Close recording that every write is durable
)

func (c writeCause) String() string {
	switch c {
	case causeRecovery:
		return "recovery"
	case causeFlush:
		return "flush"
	case causeCompaction:
		return "compaction"
	case causeLogSwitch:
		return "log switch"
	case causeClose:
		return "close"
	}
	return "unknown"
}

// testHooks lets tests see which part of the engine does what. Production
// code leaves Options.testHooks nil; every call site checks.
type testHooks struct {
	// beforeTable is called before a table file is created.
	beforeTable func(fileNum uint64, cause writeCause)
	// beforeEdit is called with manifestMu held before the version set
	// writes a manifest edit or snapshot: every manifest, CURRENT and
	// directory-sync operation until the next call is on behalf of cause.
	beforeEdit func(cause writeCause)
}

func (db *DB) hookBeforeTable(fileNum uint64, cause writeCause) {
	if h := db.opts.testHooks; h != nil && h.beforeTable != nil {
		h.beforeTable(fileNum, cause)
	}
}

// REQUIRES: manifestMu held.
func (db *DB) hookBeforeEdit(cause writeCause) {
	if h := db.opts.testHooks; h != nil && h.beforeEdit != nil {
		h.beforeEdit(cause)
	}
}
