package bloomkv

import (
	"log/slog"
	"slices"
	"time"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// Options' defaults and validation (withDefaults), and the settings the
// engine derives from them: each level's compression, the filters' bits
// per key, the default MaxOpenFiles. options.go declares the settings.

// defaultIdleCompactionDelay is IdleCompactionDelay's default (a variable
// so that this package's tests can turn the timer off; see TestMain).
var defaultIdleCompactionDelay = time.Second

// withDefaults returns a copy of o (nil allowed) with every zero field set
// to its default, or an error naming the first invalid field.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	setDefault := func(p *int, def int) {
		if *p == 0 {
			*p = def
		}
	}
	setDefault(&r.MemtableSize, 4<<20)
	setDefault(&r.BlockSize, 4<<10)
	setDefault(&r.BloomBitsPerKey, 10)
	setDefault(&r.L0CompactionThreshold, 4)
	setDefault(&r.L0SlowdownWritesThreshold, 8)
	setDefault(&r.L0StopWritesThreshold, 12)
	setDefault(&r.MaxImmutableMemtables, 2)
	setDefault(&r.LevelMultiplier, 10)
	setDefault(&r.TargetFileSizeMultiplier, 2)
	if r.MaxOpenFiles == 0 {
		r.MaxOpenFiles = defaultMaxOpenFiles()
	}
	if r.BlockCacheSize == 0 {
		r.BlockCacheSize = 8 << 20
	}
	if r.LBaseMaxBytes == 0 {
		r.LBaseMaxBytes = 10 << 20
	}
	if r.TargetFileSize == 0 {
		r.TargetFileSize = 2 << 20
	}
	if r.MaxManifestFileSize == 0 {
		r.MaxManifestFileSize = 4 << 20
	}
	if r.FS == nil {
		r.FS = vfs.Default
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.IdleCompactionDelay == 0 {
		r.IdleCompactionDelay = defaultIdleCompactionDelay
	}
	if r.WALBufferedDelay == 0 {
		r.WALBufferedDelay = wal.DefaultBufferedDelay
	}
	if r.FilterVariant == 0 {
		r.FilterVariant = filter.VariantStandard
	}
	if r.FilterKey != nil && r.FilterKeyName == "" {
		r.FilterKeyName = "custom"
	}
	if r.FilterKey == nil {
		r.FilterKeyName = ""
		r.FilterWholeKey = false // without rows a filter holds whole keys anyway
	}
	bad := func(format string, args ...any) (Options, error) {
		return Options{}, invalidf("option "+format, args...)
	}
	r.LevelCompression = slices.Clone(r.LevelCompression) // the engine keeps no caller slice
	if r.ReadOnly {
		// Nothing may change: no background compaction is ever due
		// (WaitForCompactions returns at once).
		r.DisableAutomaticCompactions = true
	}
	if r.Sync {
		if r.WALMode != WALWriteThrough && r.WALMode != WALSync {
			return bad("Sync with WALMode %s: Sync means WALSync", r.WALMode)
		}
		r.WALMode = WALSync
	}
	r.Sync = r.WALMode == WALSync
	switch {
	case r.ErrorIfExists && (r.ErrorIfNotExists || r.ReadOnly):
		return bad("ErrorIfExists with ErrorIfNotExists or ReadOnly: no directory passes both")
	case r.MemtableSize < 1<<10 || r.MemtableSize > 1<<30:
		return bad("MemtableSize %d outside [1 KiB, 1 GiB]", r.MemtableSize)
	case r.BlockSize < 64 || r.BlockSize > 1<<20:
		return bad("BlockSize %d outside [64 B, 1 MiB]", r.BlockSize)
	case !r.Compression.Valid():
		return bad("Compression %d unknown", int(r.Compression))
	case slices.ContainsFunc(r.LevelCompression, func(c Compression) bool { return !c.Valid() }):
		return bad("LevelCompression %v holds an unknown compression", r.LevelCompression)
	case r.BloomBitsPerKey > 64:
		return bad("BloomBitsPerKey %d above 64", r.BloomBitsPerKey)
	case r.RangeFilterBitsPerKey != 0 && !(r.RangeFilterBitsPerKey >= filter.MinRangeBitsPerKey && r.RangeFilterBitsPerKey <= filter.MaxRangeBitsPerKey):
		return bad("RangeFilterBitsPerKey %v outside [%d, %d] (0 = no range filters)", r.RangeFilterBitsPerKey, filter.MinRangeBitsPerKey, filter.MaxRangeBitsPerKey)
	case !(r.FilterBitsPerKey >= 0 && r.FilterBitsPerKey <= 64): // NaN too
		return bad("FilterBitsPerKey %v outside [0, 64] (0 = use BloomBitsPerKey; a negative BloomBitsPerKey disables filters)", r.FilterBitsPerKey)
	case r.FilterTargetFPR != 0 && !(r.FilterTargetFPR >= 1e-9 && r.FilterTargetFPR < 1):
		return bad("FilterTargetFPR %v outside [1e-9, 1) (0 = unset)", r.FilterTargetFPR)
	case r.FilterTargetFPR > 0 && r.FilterBitsPerKey > 0:
		return bad("FilterTargetFPR %v and FilterBitsPerKey %v both set: choose one", r.FilterTargetFPR, r.FilterBitsPerKey)
	case r.FilterVariant != filter.VariantStandard && r.FilterVariant != filter.VariantBlocked && r.FilterVariant != filter.VariantFuse:
		return bad("FilterVariant %d unknown (want filter.VariantStandard, VariantBlocked or VariantFuse)", r.FilterVariant)
	case r.CacheFilterBlocks && r.BlockCacheSize < 0:
		return bad("CacheFilterBlocks needs a block cache (BlockCacheSize %d)", r.BlockCacheSize)
	case r.FilterPinning < PinLevel0Filters || r.FilterPinning > PinNoFilters:
		return bad("FilterPinning %d unknown", int(r.FilterPinning))
	case r.FilterPerLevel && r.FilterVariant == filter.VariantFuse:
		return bad("FilterPerLevel needs a bloom FilterVariant: a fuse filter's size follows from its keys")
	case r.WALMode < WALWriteThrough || r.WALMode > WALDisabled:
		return bad("WALMode %d unknown", int(r.WALMode))
	case r.WALBufferedDelay < 0 || r.WALBufferedDelay > time.Second:
		return bad("WALBufferedDelay %s outside [0, 1s]", r.WALBufferedDelay)
	case r.MemtableFilterRatio < 0 || r.MemtableFilterRatio > 0.25:
		return bad("MemtableFilterRatio %g outside [0, 0.25]", r.MemtableFilterRatio)
	case r.WALRecovery < WALRecoverTolerateTornTail || r.WALRecovery > WALRecoverPointInTime:
		return bad("WALRecovery %d unknown", int(r.WALRecovery))
	case r.L0CompactionThreshold < 1:
		return bad("L0CompactionThreshold %d below 1", r.L0CompactionThreshold)
	case r.L0SlowdownWritesThreshold < r.L0CompactionThreshold:
		return bad("L0SlowdownWritesThreshold %d below L0CompactionThreshold %d", r.L0SlowdownWritesThreshold, r.L0CompactionThreshold)
	case r.L0StopWritesThreshold < r.L0SlowdownWritesThreshold:
		return bad("L0StopWritesThreshold %d below L0SlowdownWritesThreshold %d", r.L0StopWritesThreshold, r.L0SlowdownWritesThreshold)
	case r.MaxImmutableMemtables < 1:
		return bad("MaxImmutableMemtables %d below 1", r.MaxImmutableMemtables)
	case r.LBaseMaxBytes < 1<<10:
		return bad("LBaseMaxBytes %d below 1 KiB", r.LBaseMaxBytes)
	case r.LevelMultiplier < 2:
		return bad("LevelMultiplier %d below 2", r.LevelMultiplier)
	case r.TargetFileSize < 1<<10:
		return bad("TargetFileSize %d below 1 KiB", r.TargetFileSize)
	case r.TargetFileSizeMultiplier < 1 || r.TargetFileSizeMultiplier > 10:
		return bad("TargetFileSizeMultiplier %d outside [1, 10]", r.TargetFileSizeMultiplier)
	case r.TargetFileSize > 1<<30 || r.deepestTargetFileSize() > 4<<30:
		return bad("TargetFileSize %d with multiplier %d makes tables over 4 GiB", r.TargetFileSize, r.TargetFileSizeMultiplier)
	case r.MaxOpenFiles < 10:
		return bad("MaxOpenFiles %d below 10", r.MaxOpenFiles)
	case r.MaxManifestFileSize < 1<<10:
		return bad("MaxManifestFileSize %d below 1 KiB", r.MaxManifestFileSize)
	case r.StaticLevelBytes && r.DynamicLevelBytes:
		return bad("StaticLevelBytes with DynamicLevelBytes: choose one (dynamic is the default)")
	}
	// The engine reads DynamicLevelBytes; dynamic is the default.
	r.DynamicLevelBytes = !r.StaticLevelBytes
	return r, nil
}

// compressionAt returns the compression of tables written to level.
func (o *Options) compressionAt(level int) Compression {
	if n := len(o.LevelCompression); n > 0 {
		return o.LevelCompression[min(level, n-1)]
	}
	return o.Compression
}

// filterBitsPerKey returns the bits per key tables are written with (0 =
// none): FilterBitsPerKey, else the bits for FilterTargetFPR, else
// BloomBitsPerKey.
func (o *Options) filterBitsPerKey() float64 {
	switch {
	case o.FilterBitsPerKey > 0:
		return o.FilterBitsPerKey
	case o.FilterTargetFPR > 0:
		return filter.BitsPerKeyForFPR(o.FilterTargetFPR)
	}
	return float64(max(0, o.BloomBitsPerKey))
}

// fractionalFilterBits reports whether the bits per key come from
// FilterBitsPerKey or FilterTargetFPR rather than the whole
// BloomBitsPerKey.
func (o *Options) fractionalFilterBits() bool {
	return o.FilterBitsPerKey > 0 || o.FilterTargetFPR > 0
}

// deepestTargetFileSize is the target file size of the last level.
func (o *Options) deepestTargetFileSize() int64 {
	return compaction.Options{TargetFileSize: o.TargetFileSize, TargetFileSizeMultiplier: o.TargetFileSizeMultiplier}.
		TargetFileSizeAt(manifest.NumLevels-1, 1)
}

// The default MaxOpenFiles follows the process's descriptor limit.
//
// Every table a Get may touch should stay open: a table closed to stay
// within MaxOpenFiles is opened again by the next read that needs it,
// which re-reads its footer, properties, index and filter blocks (at 10M
// keys in 644 tables of 2 MiB, a limit of 500 cost every absent-key Get
// 6,992 bytes of such reads, against 46 with every table open, and a third
// of the throughput). The descriptors are what bounds the count, so the
// default takes half of the process's limit -- the other half is left to
// the logs, the manifest and the rest of the program -- within
// [minDefaultOpenFiles, maxDefaultOpenFiles]. A process holding several
// databases, or many other files, sets MaxOpenFiles itself.
const (
	minDefaultOpenFiles = 500
	maxDefaultOpenFiles = 1 << 16
	// fallbackOpenFiles is the default where the limit cannot be read
	// (Pebble's default).
	fallbackOpenFiles = 1000
)

// defaultMaxOpenFiles returns MaxOpenFiles' default for this process.
func defaultMaxOpenFiles() int {
	return maxOpenFilesFor(vfs.DescriptorLimit())
}

// maxOpenFilesFor returns the default for a descriptor limit (0: unknown).
func maxOpenFilesFor(limit uint64) int {
	if limit == 0 {
		return fallbackOpenFiles
	}
	return int(min(max(limit/2, minDefaultOpenFiles), maxDefaultOpenFiles))
}
