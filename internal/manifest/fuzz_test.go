package manifest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
)

// FuzzVersionEditDecode: Decode never panics, fails only with corruption,
// and whatever it accepts passes Validate and survives a re-encoding.
func FuzzVersionEditDecode(f *testing.F) {
	f.Add(goldenEditBytes)
	f.Add([]byte{})
	f.Add([]byte{0x01, 0x80})
	f.Add([]byte{0x04, 0x01, 0x05, 'a', 'b'})
	f.Add(SnapshotEdit(&State{Version: &Version{}}).Encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		var e VersionEdit
		if err := e.Decode(data); err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("non-corruption error: %v", err)
			}
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("Decode accepted an edit Validate rejects: %v", err)
		}
		var again VersionEdit
		if err := again.Decode(e.Encode()); err != nil || !editsEqual(&e, &again) {
			t.Fatalf("re-encoding changed the edit: %v", err)
		}
	})
}

// FuzzReplay: replaying arbitrary bytes never panics, fails only with
// corruption, and a state it returns has a version that passes its checks.
func FuzzReplay(f *testing.F) {
	edits, _ := scenario()
	var log bytes.Buffer
	w := record.NewWriter(&bufferFile{&log})
	for _, e := range edits {
		if _, err := w.AddRecord(e.Encode()); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(log.Bytes())
	f.Add(log.Bytes()[:log.Len()/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := replay(bytes.NewReader(data), "MANIFEST-fuzz")
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("non-corruption error: %v", err)
			}
			return
		}
		if err := s.Version.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzParseCurrent: only "MANIFEST-<digits>\n" is accepted, and the name
// returned round-trips through base.ParseFilename.
func FuzzParseCurrent(f *testing.F) {
	f.Add([]byte("MANIFEST-000001\n"))
	f.Add([]byte("MANIFEST-\n"))
	f.Add([]byte("MANIFEST-1x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		name, err := parseCurrent(data, "CURRENT")
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("non-corruption error: %v", err)
			}
			return
		}
		if ft, _, ok := base.ParseFilename(name); !ok || ft != base.FileTypeManifest || name+"\n" != string(data) {
			t.Fatalf("accepted %q as %q", data, name)
		}
	})
}
