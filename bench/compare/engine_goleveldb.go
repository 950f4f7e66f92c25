package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

var goleveldbEngine = &engine{
	name:   "goleveldb",
	module: "github.com/syndtr/goleveldb",
	mode: func(d durability) (string, bool) {
		switch d {
		case writeThrough:
			return "WriteOptions{Sync: false}, write merging on (NoWriteMerge false): the journal is written to the OS before Put returns", true
		case buffered:
			return "no buffered mode: every write reaches the OS before Put returns (or is fsynced)", false
		case synced:
			return "WriteOptions{Sync: true}, write merging on (concurrent writes share a journal write and fsync)", true
		}
		return "", false
	},
	open:          openGoleveldb,
	noPrefixSeeks: "goleveldb has no prefix seek and no prefix filter: a row's columns are a range scan there",
	settingNotes: func(s *settings) []string {
		notes := []string{
			fmt.Sprintf("goleveldb: Filter = filter.NewBloomFilter(%d) (default: no filter); one filter per 2 KiB of table data, for every level; index and filter blocks go through its block cache", s.bloomBits),
			"goleveldb: v1.0.0 cannot turn off seek-triggered compactions (a Get that looks at two tables, even one whose filter says no, charges the first; a table is compacted after size/16 KiB charges, at least 100), so it may compact while reads are timed; the report shows its tree before and after the reads and the bytes its compactions wrote",
			"goleveldb: has no Flush and no wait for compactions: to flush, the harness closes and reopens the database (recovery writes the memtable to a table), then polls its tables until no level is over its target and nothing changes",
		}
		if s.matched {
			notes = append(notes, fmt.Sprintf("goleveldb: the shape settings above; CompactionTotalSize %s: goleveldb's level-n target is CompactionTotalSize*multiplier^n, so its default (10 MiB) puts 100 MiB on level 1; this gives level 1 %s like the others", mib(s.lBaseBytes/int64(s.multiplier)), mib(s.lBaseBytes)))
		} else {
			notes = append(notes, "goleveldb: its defaults otherwise (2 MiB tables, level 1 target 100 MiB x10, L0 compaction at 4 tables, slowdown 8, pause 12, 500 open files, snappy)")
		}
		return notes
	},
}

type goleveldbStore struct {
	// wrote is set by put: the memtable may hold writes, so the next
	// flush reopens the database.
	wrote atomic.Bool

	dir string
	o   *opt.Options
	wo  *opt.WriteOptions
	db  *leveldb.DB
	// writtenBefore is what earlier openings of the database wrote: its
	// I/O counter starts from zero at each open.
	writtenBefore int64
}

func goleveldbOptions(s *settings) *opt.Options {
	var f filter.Filter
	if s.bloomBits > 0 {
		f = filter.NewBloomFilter(s.bloomBits)
	}
	o := &opt.Options{
		BlockSize:          s.blockSize,
		Filter:             f,
		BlockCacheCapacity: int(s.cacheSize),
		WriteBuffer:        s.memtableSize,
	}
	if s.matched {
		o.Compression = opt.SnappyCompression
		o.CompactionL0Trigger = s.l0Compaction
		o.WriteL0SlowdownTrigger = s.l0Slowdown
		o.WriteL0PauseTrigger = s.l0Stop
		o.CompactionTableSize = int(s.tableSize)
		o.CompactionTotalSize = int(s.lBaseBytes / int64(s.multiplier))
		o.CompactionTotalSizeMultiplier = float64(s.multiplier)
		o.OpenFilesCacheCapacity = s.maxOpenFiles
	}
	return o
}

func openGoleveldb(dir string, s *settings, d durability) (store, error) {
	o := goleveldbOptions(s)
	db, err := leveldb.OpenFile(dir, o)
	if err != nil {
		return nil, err
	}
	return &goleveldbStore{dir: dir, o: o, wo: &opt.WriteOptions{Sync: d == synced}, db: db}, nil
}

// reopen closes and opens the database with o, keeping its write count.
func (g *goleveldbStore) reopenWith(o *opt.Options) error {
	var st leveldb.DBStats
	if err := g.db.Stats(&st); err != nil {
		return err
	}
	if err := g.db.Close(); err != nil {
		return err
	}
	g.writtenBefore += int64(st.IOWrite)
	db, err := leveldb.OpenFile(g.dir, o)
	if err != nil {
		return err
	}
	g.db, g.o = db, o
	return nil
}

func (g *goleveldbStore) reopen(rp readPhase) error {
	o := *g.o
	o.BlockCacheCapacity = int(rp.blockCache)
	o.ErrorIfMissing = true
	return g.reopenWith(&o)
}

func (g *goleveldbStore) put(key, value []byte) error {
	if !g.wrote.Load() {
		g.wrote.Store(true)
	}
	return g.db.Put(key, value, g.wo)
}

func (g *goleveldbStore) get(key, dst []byte) ([]byte, bool, error) {
	v, err := g.db.Get(key, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return dst[:0], false, nil
	}
	if err != nil {
		return dst[:0], false, err
	}
	return v, true, nil // already a copy the caller owns
}

func (g *goleveldbStore) newIter() (storeIter, error) {
	it := g.db.NewIterator(nil, nil)
	return &goleveldbIter{it: it}, it.Error()
}

// flush reopens the database if anything was written since the last
// flush: recovery writes the memtable to a table. A reopen also empties the
// block cache, so it happens only then.
func (g *goleveldbStore) flush() error {
	if !g.wrote.Swap(false) {
		return nil
	}
	if err := g.reopenWith(g.o); err != nil {
		return fmt.Errorf("reopening to flush the memtable: %w", err)
	}
	return nil
}

// background reports the tables, idle when no level is over its target.
func (g *goleveldbStore) background() (any, bool) {
	levels, err := g.tables()
	if err != nil {
		return err.Error(), false
	}
	due := false
	for level, sizes := range levels {
		if level == 0 {
			due = due || len(sizes) >= g.o.GetCompactionL0Trigger()
			continue
		}
		var total int64
		for _, n := range sizes {
			total += n
		}
		due = due || total >= g.o.GetCompactionTotalSize(level)
	}
	return fmt.Sprint(levels), !due
}

func (g *goleveldbStore) compactAll() error { return g.db.CompactRange(util.Range{}) }

func (g *goleveldbStore) counters() engineCounters {
	c := engineCounters{Compactions: -1, ReadCompactions: -1}
	var st leveldb.DBStats
	if err := g.db.Stats(&st); err == nil {
		c.BytesWritten = g.writtenBefore + int64(st.IOWrite)
		c.BlockCacheBytes = int64(st.BlockCacheSize)
		// Every table goleveldb wrote since this opening, flushes and
		// compactions alike (Stats leaves out levels that are empty and
		// idle, so its slices are not indexed by level). The differences
		// the report takes are over timed reads, when nothing flushes,
		// within one opening.
		for _, n := range st.LevelWrite {
			c.CompactionBytes += n
		}
	}
	c.FilterBytes, c.IndexBytes = g.metaBytes()
	return c
}

// tables returns the size of every table, level by level, from the
// "leveldb.sstables" property (lines "--- level N ---" and "num:size[...]").
func (g *goleveldbStore) tables() ([][]int64, error) {
	text, err := g.db.GetProperty("leveldb.sstables")
	if err != nil {
		return nil, err
	}
	var levels [][]int64
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "--- level ") {
			levels = append(levels, nil)
			continue
		}
		var num, size int64
		if _, err := fmt.Sscanf(line, "%d:%d", &num, &size); err != nil || len(levels) == 0 {
			return nil, fmt.Errorf("goleveldb sstables property: unexpected line %q", line)
		}
		levels[len(levels)-1] = append(levels[len(levels)-1], size)
	}
	return levels, sc.Err()
}

func (g *goleveldbStore) shape() treeShape {
	var sh treeShape
	levels, err := g.tables()
	if err != nil {
		return sh
	}
	for _, sizes := range levels {
		sh.TablesPerLevel = append(sh.TablesPerLevel, int64(len(sizes)))
		for _, n := range sizes {
			sh.TableBytes += n
		}
	}
	return sh
}

func (g *goleveldbStore) close() error { return g.db.Close() }

type goleveldbIter struct{ it iterator.Iterator }

func (i *goleveldbIter) seekGE(key []byte) bool { return i.it.Seek(key) }
func (i *goleveldbIter) seekPrefixGE([]byte) bool {
	panic("goleveldb has no prefix seek (engine.noPrefixSeeks)")
}
func (i *goleveldbIter) next() bool  { return i.it.Next() }
func (i *goleveldbIter) key() []byte { return i.it.Key() }
func (i *goleveldbIter) err() error  { return i.it.Error() }
func (i *goleveldbIter) close() error {
	err := i.it.Error()
	i.it.Release()
	return err
}
