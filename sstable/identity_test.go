package sstable

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

func TestCheckIdentity(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(41, 42)), 50, 2)
	data, m := buildTable(t, es, WriterOptions{FileNum: 7, DBID: []byte("db-one")})
	r := mustOpenBytes(t, data, ReaderOptions{})
	defer r.Close()
	good := Identity{FileNum: 7, Size: int64(m.Size), DBID: []byte("db-one"),
		Smallest: m.Smallest, Largest: m.Largest, SmallestSeq: m.SmallestSeq, LargestSeq: m.LargestSeq}
	if err := r.CheckIdentity(good); err != nil {
		t.Fatalf("the right identity: %v", err)
	}
	otherKey := kv.MakeInternalKey([]byte("zzz"), 1, kv.KindSet)
	for name, c := range map[string]struct {
		change func(*Identity)
		want   string
	}{
		"file number":       {func(id *Identity) { id.FileNum = 8 }, "opened as file 000008"},
		"database":          {func(id *Identity) { id.DBID = []byte("db-two") }, `belongs to database "db-one"`},
		"smallest key":      {func(id *Identity) { id.Smallest = otherKey }, "keys"},
		"largest key":       {func(id *Identity) { id.Largest = otherKey }, "keys"},
		"smallest sequence": {func(id *Identity) { id.SmallestSeq++ }, "sequences"},
		"largest sequence":  {func(id *Identity) { id.LargestSeq-- }, "sequences"},
	} {
		id := good
		c.change(&id)
		err := r.CheckIdentity(id)
		if !errors.Is(err, kv.ErrCorruption) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "000007.sst") {
			t.Errorf("%s differs: %v; want corruption naming the file and %q", name, err, c.want)
		}
	}
	// Unknown parts are not checked: no database identity, no key range.
	if err := r.CheckIdentity(Identity{FileNum: 7}); err != nil {
		t.Fatalf("file number only: %v", err)
	}
	// A table written without identity is checked on its ranges only.
	anon, _ := buildTable(t, es, WriterOptions{})
	ra := mustOpenBytes(t, anon, ReaderOptions{})
	defer ra.Close()
	id := good
	id.FileNum, id.DBID = 99, []byte("any")
	if err := ra.CheckIdentity(id); err != nil {
		t.Fatalf("table without identity: %v", err)
	}
	id.LargestSeq++
	if err := ra.CheckIdentity(id); !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("table without identity, wrong sequences: %v", err)
	}
}
