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
		return []string{
			fmt.Sprintf("goleveldb: Filter = filter.NewBloomFilter(%d) (default: no filter); one filter for every level", s.bloomBits),
			fmt.Sprintf("goleveldb: CompactionTotalSize %s: goleveldb's level-n target is CompactionTotalSize*multiplier^n, so its default (10 MiB) puts 100 MiB on level 1; this gives level 1 %s like the others", mib(s.lBaseBytes/int64(s.multiplier)), mib(s.lBaseBytes)),
			"goleveldb: v1.0.0 cannot turn off seek-triggered compactions (a Get that looks at two tables, even one whose filter says no, charges the first; a table is compacted after size/16 KiB charges, at least 100), so it may compact while reads are timed; the report shows its tree before and after the reads",
			"goleveldb: has no Flush and no wait for compactions: to settle after writes, the harness closes and reopens the database (recovery writes the memtable to a level-0 table, as a flush would; the block cache starts empty, as the others' holds no data read yet) and then polls its tables until no level is over its target and nothing changes; one frozen memtable waits for a flush at most",
		}
	},
}

type goleveldbStore struct {
	// wrote is set by put: the memtable may hold writes, so the next
	// settle reopens the database to flush it.
	wrote atomic.Bool

	dir string
	o   *opt.Options
	wo  *opt.WriteOptions
	db  *leveldb.DB
}

func openGoleveldb(dir string, s *settings, d durability) (store, error) {
	var f filter.Filter
	if s.bloomBits > 0 {
		f = filter.NewBloomFilter(s.bloomBits)
	}
	o := &opt.Options{
		BlockSize:                     s.blockSize,
		Compression:                   opt.SnappyCompression,
		Filter:                        f,
		BlockCacheCapacity:            int(s.cacheSize),
		WriteBuffer:                   s.memtableSize,
		CompactionL0Trigger:           s.l0Compaction,
		WriteL0SlowdownTrigger:        s.l0Slowdown,
		WriteL0PauseTrigger:           s.l0Stop,
		CompactionTableSize:           int(s.tableSize),
		CompactionTotalSize:           int(s.lBaseBytes / int64(s.multiplier)),
		CompactionTotalSizeMultiplier: float64(s.multiplier),
		OpenFilesCacheCapacity:        s.maxOpenFiles,
	}
	db, err := leveldb.OpenFile(dir, o)
	if err != nil {
		return nil, err
	}
	return &goleveldbStore{dir: dir, o: o, wo: &opt.WriteOptions{Sync: d == synced}, db: db}, nil
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

// settle flushes the memtable, if anything was written since the last
// settle, by closing and reopening the database (recovery writes the
// memtable to a level-0 table); a reopen also empties the block cache, so it
// happens only then. Then it polls the tables until no level is over its
// target and nothing changes.
func (g *goleveldbStore) settle() error {
	if g.wrote.Swap(false) {
		if err := g.db.Close(); err != nil {
			return err
		}
		db, err := leveldb.OpenFile(g.dir, g.o)
		if err != nil {
			return fmt.Errorf("reopening to flush the memtable: %w", err)
		}
		g.db = db
	}
	return waitQuiet(func() (any, bool) {
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
	})
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
