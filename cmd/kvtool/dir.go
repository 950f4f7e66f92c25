package main

import (
	"fmt"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// lostDirName is the subdirectory that the engine's point-in-time
// recovery and kvtool repair move files into instead of deleting them.
const lostDirName = "lost"

// dirFile is one bloomkv file found in a database directory.
type dirFile struct {
	name string
	num  uint64
	size int64
}

// dirListing sorts a database directory's entries by kind. Numbered kinds
// are in ascending number order.
type dirListing struct {
	tables    map[uint64]dirFile
	logs      []dirFile
	manifests []dirFile
	temps     []dirFile
	current   bool
	foreign   []string // names that are not bloomkv files
}

// listDir lists dir through fs without opening anything.
func listDir(fs vfs.FS, dir string) (*dirListing, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("kvtool: list %s: %w", dir, err)
	}
	sort.Strings(names)
	l := &dirListing{tables: map[uint64]dirFile{}}
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			l.foreign = append(l.foreign, name)
			continue
		}
		var size int64
		if t != base.FileTypeCurrent && t != base.FileTypeLock {
			info, err := fs.Stat(fs.PathJoin(dir, name))
			if err != nil {
				return nil, fmt.Errorf("kvtool: stat %s: %w", fs.PathJoin(dir, name), err)
			}
			if info.IsDir() {
				l.foreign = append(l.foreign, name)
				continue
			}
			size = info.Size()
		}
		f := dirFile{name: name, num: num, size: size}
		switch t {
		case base.FileTypeTable:
			l.tables[num] = f
		case base.FileTypeLog:
			l.logs = append(l.logs, f)
		case base.FileTypeManifest:
			l.manifests = append(l.manifests, f)
		case base.FileTypeTemp:
			l.temps = append(l.temps, f)
		case base.FileTypeCurrent:
			l.current = true
		}
	}
	byNum := func(fs []dirFile) {
		sort.Slice(fs, func(i, j int) bool { return fs[i].num < fs[j].num })
	}
	byNum(l.logs)
	byNum(l.manifests)
	byNum(l.temps)
	return l, nil
}

// tableNums returns the numbers of the tables found, ascending.
func (l *dirListing) tableNums() []uint64 {
	nums := make([]uint64, 0, len(l.tables))
	for n := range l.tables {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	return nums
}

// isEmpty reports whether the directory holds no bloomkv file at all.
func (l *dirListing) isEmpty() bool {
	return len(l.tables) == 0 && len(l.logs) == 0 && len(l.manifests) == 0 && !l.current
}
