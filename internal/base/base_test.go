package base

import (
	"errors"
	"testing"
)

func TestFilenames(t *testing.T) {
	for _, c := range []struct {
		t    FileType
		num  uint64
		name string
	}{
		{FileTypeLog, 7, "000007.log"},
		{FileTypeTable, 1234567, "1234567.sst"},
		{FileTypeManifest, 3, "MANIFEST-000003"},
		{FileTypeCurrent, 0, "CURRENT"},
		{FileTypeLock, 0, "LOCK"},
		{FileTypeTemp, 9, "000009.tmp"},
	} {
		if got := MakeFilename(c.t, c.num); got != c.name {
			t.Errorf("MakeFilename = %q, want %q", got, c.name)
		}
		ty, num, ok := ParseFilename(c.name)
		if !ok || ty != c.t || num != c.num {
			t.Errorf("ParseFilename(%q) = %v %d %v", c.name, ty, num, ok)
		}
	}
	for _, bad := range []string{"", "x.sst", "12.txt", "MANIFEST-", ".log", "LOCKS"} {
		if _, _, ok := ParseFilename(bad); ok {
			t.Errorf("ParseFilename(%q) accepted", bad)
		}
	}
}

func TestCorruptionError(t *testing.T) {
	err := CorruptionErrorf("bloomkv/x: %s at offset %d: bad", "f.sst", 42)
	if !errors.Is(err, ErrCorruption) || err.Error() != "bloomkv/x: f.sst at offset 42: bad: bloomkv: corruption" {
		t.Fatalf("%v", err)
	}
}
