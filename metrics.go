package bloomkv

import (
	"fmt"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/dustin/go-humanize"
)

// Metrics: the counters a DB keeps, and the snapshot Metrics returns.

// Metrics is a snapshot of counters since Open. Every counter is measured
// where the work happens (the read path, the SSTable reader, the block cache,
// the compactor), never derived from a model. Subtract two readings with Sub
// to see what a workload cost.
type Metrics struct {
	// Levels has one entry per level (index = level).
	Levels []LevelMetrics

	// Point lookups (Get on DB and Snapshot).
	Gets                 uint64 // Get calls
	TablesProbed         uint64 // SSTables whose key range covered a Get's key
	FilterNegatives      uint64 // of those, skipped because the filter said "absent"
	FilterFalsePositives uint64 // filter said "maybe", the table did not hold the key
	DataBlockReads       uint64 // data blocks read for Gets, from cache or file
	BlockCacheHits       uint64 // data blocks for Gets found in the block cache
	BlockCacheMisses     uint64 // data blocks for Gets read from a file
	BytesRead            uint64 // bytes read from SSTable files for Gets, with the table opens they caused
	MemtableHits         uint64 // Gets answered by a memtable (value or tombstone)

	// Iterators (on DB and Snapshot), counted where the work happens.
	IterSeeks       uint64 // positioning calls: First, Last, SeekGE, SeekLT, SeekPrefixGE
	IterPrefixSeeks uint64 // of those, SeekPrefixGE (and First and SeekGE with an IterOptions.Prefix that is a filter key)
	// IterTablesProbed counts the tables prefix seeks considered; of those,
	// IterFilterNegatives were skipped on their filter (no block read) and
	// IterFilterFalsePositives let through by their filter held no key of
	// the prefix.
	IterTablesProbed         uint64
	IterFilterNegatives      uint64
	IterFilterFalsePositives uint64
	IterDataBlockReads       uint64 // data blocks iterators read, from cache or file
	IterBytesRead            uint64 // bytes iterators read from table files
	// RangeFilter: bounded seeks and range filters (level_iter.go).
	RangeFilter RangeFilterMetrics

	// Background work.
	Flushes     uint64
	Compactions uint64
	// IdleCompactions counts the compactions of level 0 that ran because
	// writes paused (Options.IdleCompactionDelay); they are also counted
	// in Compactions.
	IdleCompactions uint64
	// ReadCompactions counts the compactions that ran because reads kept
	// passing through a table on their way to a deeper one for the same
	// keys (Options.DisableReadCompactions); also counted in Compactions.
	ReadCompactions uint64
	// WriteStalls counts writes that had to wait (too many level-0 tables
	// or immutable memtables); WriteStallTime is the total time they waited.
	WriteStalls    uint64
	WriteStallTime time.Duration
	// WriteSlowdowns counts writes delayed by 1 ms at the slowdown threshold.
	WriteSlowdowns uint64

	// Bytes, for write amplification.
	UserBytesWritten uint64 // keys and values passed to Put/Delete/Write
	// RangeDeletions counts the range deletions written (DeleteRange and
	// Batch.DeleteRange operations).
	RangeDeletions  uint64
	WALBytesWritten uint64 // bytes appended to write-ahead logs
	// WALRecords counts log records; group commit makes it smaller than
	// the number of writes when writers overlap.
	WALRecords uint64
	WALSyncs   uint64
	// WALRecoveryDroppedBytes counts the log bytes Open dropped: a torn
	// tail of the newest log, and in point-in-time recovery everything
	// after the first damage. Nonzero means writes may be missing.
	WALRecoveryDroppedBytes uint64
	FlushBytesWritten       uint64 // bytes of tables written by flushes
	// CompactionBytesRead/Written total the per-level figures.
	CompactionBytesRead    uint64
	CompactionBytesWritten uint64

	// Filters and caches.
	FilterBytes int64  // bytes of filter blocks held in memory by open tables
	FilterKeys  uint64 // distinct keys indexed by the filters of live tables
	// FilterFPRTheory is the false-positive rate the live tables' filters
	// have in theory, each by its own shape (bits, keys, probes, variant:
	// filter.Block.TheoreticalFPR), averaged weighted by keys; 0 without
	// filters. Per level in LevelMetrics; it describes the filters, it is
	// not a measurement.
	FilterFPRTheory float64
	// FilterBytesResident is the part of FilterBytes held in memory now:
	// the filters of the tables open in the table cache (with fewer
	// MaxOpenFiles than tables, the others are read again on a re-open),
	// or with Options.CacheFilterBlocks the filters pinned and those in
	// the block cache.
	FilterBytesResident int64
	// With Options.CacheFilterBlocks: the filter bytes in the block cache
	// now, the bytes pinned (both part of BlockCacheBytes), filter lookups
	// in the block cache that hit and missed, and the filter blocks read
	// from files (a miss, or a first pin; their bytes are in BytesRead).
	FilterBytesCached, FilterBytesPinned int64
	FilterCacheHits, FilterCacheMisses   uint64
	FilterBlockReads                     uint64
	// IndexPartitionReads counts the index partitions Gets read from
	// files because the block cache did not hold them (partitioned tables
	// with CacheFilterBlocks; their bytes are in BytesRead).
	IndexPartitionReads uint64
	// FilterSkips counts table probes by Gets that did without a filter
	// the block cache did not hold, at a level where recent Gets mostly
	// found their key (CacheFilterBlocks, unless AlwaysReadFilters).
	FilterSkips uint64
	// IndexBytesResident is the index memory of the tables open in the
	// table cache: whole index blocks and the top-level indexes of
	// partitioned tables (and, without CacheFilterBlocks, their index
	// partitions), which are never charged to the block cache, so this is
	// memory held for reads outside it.
	IndexBytesResident int64
	// RangeFilterBytesResident is the memory of the range filters
	// (Options.RangeFilterBitsPerKey) of the tables open in the table
	// cache: an open table holds its whole range filter, outside the
	// block cache, whatever CacheFilterBlocks says. Per level in
	// LevelMetrics.
	RangeFilterBytesResident int64
	// RangeFilterBytes is the range-filter memory of all live tables, open
	// or not: what RangeFilterBytesResident is once every table is open.
	RangeFilterBytes int64
	BlockCacheBytes  int64 // bytes currently in the block cache
	TableCacheOpen   int   // open table readers
	// TableOpens counts table files opened (by any read, compaction or
	// Metrics); TableReopens those of them opened before and closed by
	// the table cache to stay within MaxOpenFiles; TableOpenBytes the
	// bytes the opens read from the files (footer, properties, index and
	// filter blocks). The opens a Get caused are also in its level's
	// BytesRead.
	TableOpens, TableReopens, TableOpenBytes uint64
	// TableReopensCached counts the re-opens that read nothing from the
	// file: the table cache left the blocks the table's last open read in
	// the block cache when it closed the table, and they were still there.
	TableReopensCached uint64
	MemtableBytes      int64 // mutable + immutable memtables

	// TreeFilter describes the tree-wide filter (Options.TreeFilter).
	TreeFilter TreeFilterMetrics
}

// LevelMetrics describes one level of the tree.
type LevelMetrics struct {
	Files int
	Bytes int64
	// Compaction traffic into this level: bytes read from this level and the
	// one above, bytes of tables written to this level.
	CompactionBytesIn  uint64
	CompactionBytesOut uint64
	Compactions        uint64
	// Point-lookup work in this level's tables (the totals of Metrics are
	// their sums): where the filters save reads, level by level.
	TablesProbed         uint64
	FilterNegatives      uint64
	FilterFalsePositives uint64
	DataBlockReads       uint64
	BytesRead            uint64
	// The same for iterators in this level's tables (see Metrics.Iter*).
	IterTablesProbed         uint64
	IterFilterNegatives      uint64
	IterFilterFalsePositives uint64
	IterDataBlockReads       uint64
	IterBytesRead            uint64
	// RangeFilter: the range filters of this level's tables at work.
	RangeFilter RangeFilterMetrics
	// The filters of this level's live tables: bytes held in memory,
	// distinct keys indexed, and their theoretical false-positive rate
	// (key-weighted, see Metrics.FilterFPRTheory). Tables without a filter
	// count for no bytes and no keys.
	FilterBytes     int64
	FilterKeys      uint64
	FilterFPRTheory float64
	// FilterBytesResident is the part of FilterBytes in memory now (the
	// level's tables open in the table cache; with CacheFilterBlocks, the
	// level's pinned filters: cached ones are counted only in
	// Metrics.FilterBytesCached).
	FilterBytesResident int64
	// RangeFilterBytesResident is the range-filter memory of this
	// level's tables open in the table cache, RangeFilterBytes that of
	// all its live tables (see Metrics).
	RangeFilterBytesResident, RangeFilterBytes int64
	// FilterBlockReads counts the filter blocks Gets read from this
	// level's tables (CacheFilterBlocks: misses and first pins).
	FilterBlockReads uint64
	// IndexPartitionReads counts the index partitions Gets read from this
	// level's tables' files (CacheFilterBlocks: misses).
	IndexPartitionReads uint64
	// FilterSkips counts probes of this level's tables that did without
	// an evicted filter (see Metrics).
	FilterSkips uint64
	// TableOpens counts this level's table opens that Gets and iterators
	// caused (their bytes are in BytesRead and IterBytesRead).
	TableOpens uint64
	// FilterBitsPerKey is what the filter policy gives a table written to
	// this level now: the uniform setting, or with Options.FilterPerLevel
	// the per-level choice from the live tree (for level 0, a table the
	// size of the last flush, with the memory controller's correction; a
	// compaction's outputs are corrected by what they replace), or 0 (no filter; FilterSkipLastLevel's last
	// level). Tables keep the bits they were written with: FilterBytes
	// and FilterKeys give what they hold.
	FilterBitsPerKey float64
}

// WriteAmplification returns (bytes written to logs and tables) / (bytes of
// user writes), or 0 before any write.
func (m Metrics) WriteAmplification() float64 {
	if m.UserBytesWritten == 0 {
		return 0
	}
	return float64(m.WALBytesWritten+m.FlushBytesWritten+m.CompactionBytesWritten) / float64(m.UserBytesWritten)
}

// Sub returns the counters of m minus those of an earlier reading; gauges
// (level shapes, memory figures) are m's own.
func (m Metrics) Sub(earlier Metrics) Metrics {
	d := m
	d.Levels = append([]LevelMetrics(nil), m.Levels...)
	for i := range d.Levels {
		if i < len(earlier.Levels) {
			d.Levels[i].CompactionBytesIn -= earlier.Levels[i].CompactionBytesIn
			d.Levels[i].CompactionBytesOut -= earlier.Levels[i].CompactionBytesOut
			d.Levels[i].Compactions -= earlier.Levels[i].Compactions
			d.Levels[i].TablesProbed -= earlier.Levels[i].TablesProbed
			d.Levels[i].FilterNegatives -= earlier.Levels[i].FilterNegatives
			d.Levels[i].FilterFalsePositives -= earlier.Levels[i].FilterFalsePositives
			d.Levels[i].DataBlockReads -= earlier.Levels[i].DataBlockReads
			d.Levels[i].BytesRead -= earlier.Levels[i].BytesRead
			d.Levels[i].TableOpens -= earlier.Levels[i].TableOpens
			d.Levels[i].FilterBlockReads -= earlier.Levels[i].FilterBlockReads
			d.Levels[i].IndexPartitionReads -= earlier.Levels[i].IndexPartitionReads
			d.Levels[i].FilterSkips -= earlier.Levels[i].FilterSkips
			d.Levels[i].IterTablesProbed -= earlier.Levels[i].IterTablesProbed
			d.Levels[i].IterFilterNegatives -= earlier.Levels[i].IterFilterNegatives
			d.Levels[i].IterFilterFalsePositives -= earlier.Levels[i].IterFilterFalsePositives
			d.Levels[i].IterDataBlockReads -= earlier.Levels[i].IterDataBlockReads
			d.Levels[i].IterBytesRead -= earlier.Levels[i].IterBytesRead
			d.Levels[i].RangeFilter = d.Levels[i].RangeFilter.sub(earlier.Levels[i].RangeFilter)
		}
	}
	d.Gets -= earlier.Gets
	d.TablesProbed -= earlier.TablesProbed
	d.FilterNegatives -= earlier.FilterNegatives
	d.FilterFalsePositives -= earlier.FilterFalsePositives
	d.DataBlockReads -= earlier.DataBlockReads
	d.BlockCacheHits -= earlier.BlockCacheHits
	d.BlockCacheMisses -= earlier.BlockCacheMisses
	d.BytesRead -= earlier.BytesRead
	d.MemtableHits -= earlier.MemtableHits
	d.IterSeeks -= earlier.IterSeeks
	d.IterPrefixSeeks -= earlier.IterPrefixSeeks
	d.IterTablesProbed -= earlier.IterTablesProbed
	d.IterFilterNegatives -= earlier.IterFilterNegatives
	d.IterFilterFalsePositives -= earlier.IterFilterFalsePositives
	d.IterDataBlockReads -= earlier.IterDataBlockReads
	d.IterBytesRead -= earlier.IterBytesRead
	d.RangeFilter = d.RangeFilter.sub(earlier.RangeFilter)
	d.Flushes -= earlier.Flushes
	d.Compactions -= earlier.Compactions
	d.IdleCompactions -= earlier.IdleCompactions
	d.ReadCompactions -= earlier.ReadCompactions
	d.WriteStalls -= earlier.WriteStalls
	d.WriteStallTime -= earlier.WriteStallTime
	d.WriteSlowdowns -= earlier.WriteSlowdowns
	d.UserBytesWritten -= earlier.UserBytesWritten
	d.RangeDeletions -= earlier.RangeDeletions
	d.WALBytesWritten -= earlier.WALBytesWritten
	d.WALRecords -= earlier.WALRecords
	d.WALSyncs -= earlier.WALSyncs
	d.FlushBytesWritten -= earlier.FlushBytesWritten
	d.CompactionBytesRead -= earlier.CompactionBytesRead
	d.CompactionBytesWritten -= earlier.CompactionBytesWritten
	d.TableOpens -= earlier.TableOpens
	d.FilterCacheHits -= earlier.FilterCacheHits
	d.FilterCacheMisses -= earlier.FilterCacheMisses
	d.FilterBlockReads -= earlier.FilterBlockReads
	d.IndexPartitionReads -= earlier.IndexPartitionReads
	d.FilterSkips -= earlier.FilterSkips
	d.TableReopens -= earlier.TableReopens
	d.TableOpenBytes -= earlier.TableOpenBytes
	d.TableReopensCached -= earlier.TableReopensCached
	d.TreeFilter = m.TreeFilter.sub(earlier.TreeFilter)
	return d
}

// String prints a per-level table and the read and write counters. Sizes
// are in binary units as github.com/dustin/go-humanize's IBytes prints
// them, like kvtool's and kvbench's: one decimal below 10 of a unit
// (3.0 MiB), none from 10 on (13 MiB).
func (m Metrics) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "level  files        size   comp-in  comp-out  compactions |   probed  filter-neg  filter-fp   blocks\n")
	var files int
	var bytes int64
	for i, l := range m.Levels {
		fmt.Fprintf(&sb, "%5d %6d %11s %9s %9s %12d | %8d %11d %10d %8d\n", i, l.Files, humanize.IBytes(uint64(l.Bytes)),
			humanize.IBytes(l.CompactionBytesIn), humanize.IBytes(l.CompactionBytesOut), l.Compactions,
			l.TablesProbed, l.FilterNegatives, l.FilterFalsePositives, l.DataBlockReads)
		files += l.Files
		bytes += l.Bytes
	}
	fmt.Fprintf(&sb, "total %6d %11s %9s %9s %12d | %8d %11d %10d %8d\n", files, humanize.IBytes(uint64(bytes)),
		humanize.IBytes(m.CompactionBytesRead), humanize.IBytes(m.CompactionBytesWritten), m.Compactions,
		m.TablesProbed, m.FilterNegatives, m.FilterFalsePositives, m.DataBlockReads)
	fmt.Fprintf(&sb, "gets %d: tables probed %d, filter negatives %d, false positives %d, data blocks %d (cache hits %d, misses %d), bytes read %s, memtable hits %d\n",
		m.Gets, m.TablesProbed, m.FilterNegatives, m.FilterFalsePositives, m.DataBlockReads,
		m.BlockCacheHits, m.BlockCacheMisses, humanize.IBytes(m.BytesRead), m.MemtableHits)
	fmt.Fprintf(&sb, "iterators: %d seeks (%d prefix seeks: tables probed %d, filter negatives %d, false positives %d), data blocks %d, bytes read %s\n",
		m.IterSeeks, m.IterPrefixSeeks, m.IterTablesProbed, m.IterFilterNegatives, m.IterFilterFalsePositives,
		m.IterDataBlockReads, humanize.IBytes(m.IterBytesRead))
	fmt.Fprintf(&sb, "writes: user %s, wal %s in %d records (%d syncs), flushed %s, compacted %s, write amplification %.2f; flushes %d, stalls %d (%s), slowdowns %d\n",
		humanize.IBytes(m.UserBytesWritten), humanize.IBytes(m.WALBytesWritten), m.WALRecords, m.WALSyncs, humanize.IBytes(m.FlushBytesWritten),
		humanize.IBytes(m.CompactionBytesWritten), m.WriteAmplification(), m.Flushes, m.WriteStalls,
		m.WriteStallTime.Round(time.Microsecond), m.WriteSlowdowns)
	if m.WALRecoveryDroppedBytes > 0 {
		fmt.Fprintf(&sb, "recovery dropped %s of write-ahead log\n", humanize.IBytes(m.WALRecoveryDroppedBytes))
	}
	if len(m.Levels) > 0 {
		fmt.Fprintf(&sb, "filter bits/key for new tables by level:")
		for _, l := range m.Levels {
			fmt.Fprintf(&sb, " %.2f", l.FilterBitsPerKey)
		}
		fmt.Fprintf(&sb, "; filter memory by level:")
		for _, l := range m.Levels {
			fmt.Fprintf(&sb, " %s", humanize.IBytes(uint64(l.FilterBytes)))
		}
		sb.WriteByte('\n')
	}
	fmt.Fprintf(&sb, "memory: filters %s (%d keys; %s resident), block cache %s, memtables %s, open tables %d (opens %d, re-opens %d, %s read)\n",
		humanize.IBytes(uint64(m.FilterBytes)), m.FilterKeys, humanize.IBytes(uint64(m.FilterBytesResident)), humanize.IBytes(uint64(m.BlockCacheBytes)),
		humanize.IBytes(uint64(m.MemtableBytes)), m.TableCacheOpen, m.TableOpens, m.TableReopens, humanize.IBytes(m.TableOpenBytes))
	if m.RangeFilterBytes > 0 {
		fmt.Fprintf(&sb, "range filters: %s (%s resident); resident by level:", humanize.IBytes(uint64(m.RangeFilterBytes)), humanize.IBytes(uint64(m.RangeFilterBytesResident)))
		for _, l := range m.Levels {
			fmt.Fprintf(&sb, " %s", humanize.IBytes(uint64(l.RangeFilterBytesResident)))
		}
		sb.WriteByte('\n')
	}
	m.TreeFilter.writeTo(&sb) // treefilter.go
	return sb.String()
}

// Metrics returns the counters since Open and the current shape of the tree.
func (db *DB) Metrics() Metrics {
	var m Metrics
	c := &db.counters
	for i := range db.reads {
		m.Gets += db.reads[i].gets.Load()
		m.MemtableHits += db.reads[i].memtableHits.Load()
		m.IterSeeks += db.reads[i].iterSeeks.Load()
		m.IterPrefixSeeks += db.reads[i].iterPrefixSeeks.Load()
	}
	m.Flushes = c.flushes.Load()
	m.Compactions = c.compactions.Load()
	m.IdleCompactions = c.idleCompactions.Load()
	m.ReadCompactions = c.readCompactions.Load()
	m.WriteStalls = c.writeStalls.Load()
	m.WriteStallTime = time.Duration(c.writeStallNanos.Load())
	m.WriteSlowdowns = c.writeSlowdowns.Load()
	m.UserBytesWritten = c.userBytes.Load()
	m.RangeDeletions = c.rangeDeletions.Load()
	m.WALBytesWritten = c.walBytes.Load()
	m.WALRecords = c.walRecords.Load()
	m.WALSyncs = c.walSyncs.Load()
	m.WALRecoveryDroppedBytes = c.walRecoveryDroppedBytes.Load()
	m.FlushBytesWritten = c.flushBytes.Load()

	m.Levels = make([]LevelMetrics, manifest.NumLevels)
	for l := range m.Levels {
		lm := &m.Levels[l]
		for i := range db.reads {
			sh := &db.reads[i]
			rs := &sh.levels[l]
			lm.TablesProbed += sh.probes[l].Load()
			lm.FilterNegatives += rs.FilterNegatives.Load()
			lm.FilterFalsePositives += rs.FilterFalsePositives.Load()
			lm.DataBlockReads += rs.DataBlockReads.Load()
			lm.BytesRead += rs.BytesRead.Load()
			lm.TableOpens += rs.TableOpens.Load() + sh.iterLevels[l].TableOpens.Load()
			lm.FilterBlockReads += rs.FilterBlockReads.Load()
			lm.IndexPartitionReads += rs.IndexBlockReads.Load()
			lm.FilterSkips += rs.FilterSkips.Load()
			m.BlockCacheHits += rs.BlockCacheHits.Load()
			m.BlockCacheMisses += rs.BlockCacheMisses.Load()
			is := &sh.iterLevels[l]
			lm.IterTablesProbed += sh.iterProbes[l].Load()
			lm.IterFilterNegatives += is.FilterNegatives.Load()
			lm.IterFilterFalsePositives += is.FilterFalsePositives.Load()
			lm.IterDataBlockReads += is.DataBlockReads.Load()
			lm.IterBytesRead += is.BytesRead.Load()
		}
		m.IterTablesProbed += lm.IterTablesProbed
		m.IterFilterNegatives += lm.IterFilterNegatives
		m.IterFilterFalsePositives += lm.IterFilterFalsePositives
		m.IterDataBlockReads += lm.IterDataBlockReads
		m.IterBytesRead += lm.IterBytesRead
		m.TablesProbed += lm.TablesProbed
		m.FilterNegatives += lm.FilterNegatives
		m.FilterFalsePositives += lm.FilterFalsePositives
		m.DataBlockReads += lm.DataBlockReads
		m.BytesRead += lm.BytesRead
		m.Levels[l].CompactionBytesIn = c.levelCompIn[l].Load()
		m.Levels[l].CompactionBytesOut = c.levelCompOut[l].Load()
		m.Levels[l].Compactions = c.levelCompactions[l].Load()
		if l > 0 {
			m.CompactionBytesRead += m.Levels[l].CompactionBytesIn
			m.CompactionBytesWritten += m.Levels[l].CompactionBytesOut
		}
	}
	db.rangeFilterMetrics(&m)
	if db.closed.Load() {
		return m
	}
	s, slot := db.loadReadState()
	defer s.unref(slot)
	m.TreeFilter = db.treeFilterMetrics(treeFilterOf(s.v))
	var fprKeys float64 // sum of keys × theoretical rate
	for l := range m.Levels {
		lm := &m.Levels[l]
		lm.Files = len(s.v.Levels[l])
		lm.Bytes = s.v.LevelBytes(l)
		var levelFPRKeys float64
		for _, f := range s.v.Levels[l] {
			m.IndexBytesResident += int64(db.tableCache.IndexMemory(f.FileNum))
			lm.RangeFilterBytesResident += int64(db.tableCache.RangeFilterMemory(f.FileNum))
			fs, ok := db.tableFilterStats(f)
			if ok {
				if db.opts.CacheFilterBlocks {
					lm.FilterBytesResident += int64(db.tableCache.FilterMemory(f.FileNum))
				} else if db.tableCache.IsOpen(f.FileNum) {
					lm.FilterBytesResident += fs.bytes
				}
				lm.FilterBytes += fs.bytes
				lm.RangeFilterBytes += fs.rangeBytes
				lm.FilterKeys += fs.keys
				levelFPRKeys += fs.fprTheory * float64(fs.keys)
			}
		}
		if lm.FilterKeys > 0 {
			lm.FilterFPRTheory = levelFPRKeys / float64(lm.FilterKeys)
		}
		m.FilterBytes += lm.FilterBytes
		m.FilterBytesResident += lm.FilterBytesResident
		m.RangeFilterBytesResident += lm.RangeFilterBytesResident
		m.RangeFilterBytes += lm.RangeFilterBytes
		m.FilterKeys += lm.FilterKeys
		fprKeys += levelFPRKeys
	}
	if m.FilterKeys > 0 {
		m.FilterFPRTheory = fprKeys / float64(m.FilterKeys)
	}
	for l := range m.Levels {
		// What the next write to the level would get: a flush of the
		// last flush's size, with the budget correction; for deeper
		// levels the per-level choice (a compaction's correction depends
		// on the tables it replaces).
		var incoming float64
		if l == 0 {
			incoming = float64(c.lastFlushKeys.Load())
		}
		m.Levels[l].FilterBitsPerKey = db.writeFilterBits(s.v, l, incoming, nil, incoming, nil)
	}
	m.MemtableBytes = s.mem.ApproximateSize()
	for _, im := range s.imm {
		m.MemtableBytes += im.ApproximateSize()
	}
	if db.blockCache != nil {
		m.BlockCacheBytes = db.blockCache.Size()
		if db.opts.CacheFilterBlocks {
			m.FilterBytesCached, m.FilterBytesPinned = db.blockCache.FilterBytes()
			m.FilterBytesResident += m.FilterBytesCached
			m.FilterCacheHits, m.FilterCacheMisses = db.blockCache.FilterHits(), db.blockCache.FilterMisses()
		}
	}
	for _, lm := range m.Levels {
		m.FilterBlockReads += lm.FilterBlockReads
		m.IndexPartitionReads += lm.IndexPartitionReads
		m.FilterSkips += lm.FilterSkips
	}
	m.TableCacheOpen = db.tableCache.Len()
	m.TableOpens, m.TableReopens, m.TableOpenBytes = db.tableCache.OpenCounts()
	if db.blockCache != nil {
		m.TableReopensCached = db.blockCache.OpenBlockHits()
	}
	return m
}
