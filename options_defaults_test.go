package bloomkv

import (
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

func TestMaxOpenFilesDefault(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
	}{
		{0, fallbackOpenFiles},
		{256, minDefaultOpenFiles},
		{1024, 512},
		{20000, 10000},
		{1 << 20, maxDefaultOpenFiles},
		{1 << 62, maxDefaultOpenFiles},
	} {
		if got := maxOpenFilesFor(c.limit); got != c.want {
			t.Errorf("limit %d: default MaxOpenFiles %d, want %d", c.limit, got, c.want)
		}
	}
	db := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer db.Close()
	if got, want := db.opts.MaxOpenFiles, maxOpenFilesFor(vfs.DescriptorLimit()); got != want {
		t.Fatalf("an Open without MaxOpenFiles uses %d, want %d (descriptor limit %d)", got, want, vfs.DescriptorLimit())
	}
	if vfs.DescriptorLimit() > 2*minDefaultOpenFiles && db.opts.MaxOpenFiles <= minDefaultOpenFiles {
		t.Fatalf("descriptor limit %d, yet the default stays at %d", vfs.DescriptorLimit(), db.opts.MaxOpenFiles)
	}
}
