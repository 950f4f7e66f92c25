package base

import (
	"fmt"
	"strconv"
	"strings"
)

// FileType names the kinds of file in a database directory.
type FileType int

const (
	FileTypeUnknown  FileType = iota
	FileTypeLog               // NNNNNN.log: write-ahead log
	FileTypeTable             // NNNNNN.sst: SSTable
	FileTypeManifest          // MANIFEST-NNNNNN
	FileTypeCurrent           // CURRENT: names the live manifest
	FileTypeLock              // LOCK
	FileTypeTemp              // NNNNNN.tmp: being written, never live
)

// MakeFilename returns the base name of a numbered file of the given type.
// Operators and tools rely on these names; they never change.
func MakeFilename(t FileType, num uint64) string {
	switch t {
	case FileTypeLog:
		return fmt.Sprintf("%06d.log", num)
	case FileTypeTable:
		return fmt.Sprintf("%06d.sst", num)
	case FileTypeManifest:
		return fmt.Sprintf("MANIFEST-%06d", num)
	case FileTypeCurrent:
		return "CURRENT"
	case FileTypeLock:
		return "LOCK"
	case FileTypeTemp:
		return fmt.Sprintf("%06d.tmp", num)
	}
	panic("bloomkv/base: unknown file type")
}

// ParseFilename is the inverse of MakeFilename; ok is false for foreign files.
func ParseFilename(name string) (t FileType, num uint64, ok bool) {
	switch {
	case name == "CURRENT":
		return FileTypeCurrent, 0, true
	case name == "LOCK":
		return FileTypeLock, 0, true
	case strings.HasPrefix(name, "MANIFEST-"):
		n, err := strconv.ParseUint(name[len("MANIFEST-"):], 10, 64)
		return FileTypeManifest, n, err == nil
	}
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 {
		return FileTypeUnknown, 0, false
	}
	n, err := strconv.ParseUint(name[:dot], 10, 64)
	if err != nil {
		return FileTypeUnknown, 0, false
	}
	switch name[dot:] {
	case ".log":
		return FileTypeLog, n, true
	case ".sst":
		return FileTypeTable, n, true
	case ".tmp":
		return FileTypeTemp, n, true
	}
	return FileTypeUnknown, 0, false
}
