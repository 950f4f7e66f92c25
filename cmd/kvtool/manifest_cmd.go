package main

import (
	"fmt"
	"io"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/dustin/go-humanize"
)

func runManifest(args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("manifest", "DIR|MANIFEST", stderr)
	arg, code, ok := parseFlags(flags, args, "database directory or MANIFEST file", stderr)
	if !ok {
		return code
	}
	path, err := manifestPath(vfs.Default, arg)
	if err != nil {
		fmt.Fprintf(stderr, "kvtool: %v\n", err)
		return exitProblems
	}
	return printManifest(vfs.Default, path, stdout, stderr)
}

// manifestPath returns the manifest to read: arg itself when it is a file,
// else the one CURRENT names in the directory arg.
func manifestPath(fs vfs.FS, arg string) (string, error) {
	info, err := fs.Stat(arg)
	if err != nil {
		return "", err
	}
	if !info.IsDir() {
		return arg, nil
	}
	name, err := manifest.ReadCurrent(fs, arg)
	if err != nil {
		return "", err
	}
	return fs.PathJoin(arg, name), nil
}

// printManifest prints every edit of the manifest at path, then the
// version the whole history yields. Damage is reported after the edits
// read before it, and makes the exit code 1.
func printManifest(fs vfs.FS, path string, stdout, stderr io.Writer) int {
	h := readHistory(fs, path)
	fmt.Fprintf(stdout, "%s: %s, %s\n", path, humanize.IBytes(uint64(h.size)), plural(len(h.edits), "edit"))
	for i, e := range h.edits {
		fmt.Fprintln(stdout)
		printEdit(stdout, i+1, e)
	}
	if h.torn {
		fmt.Fprintf(stdout, "\nnote: torn tail: the %d bytes from offset %d on are a partial edit (a crash artefact); Open drops them\n",
			h.size-h.tornOffset, h.tornOffset)
	}
	if h.err != nil {
		fmt.Fprintf(stdout, "\nERROR: %v\n", h.err)
		fmt.Fprintf(stderr, "kvtool: %s is damaged\n", path)
		return exitProblems
	}
	// Replaying checks what decoding cannot: the first edit is a snapshot,
	// deletions name live files, and the result passes the level
	// invariants.
	state, err := manifest.ReadManifest(fs, path)
	if err != nil {
		fmt.Fprintf(stdout, "\nERROR: %v\n", err)
		fmt.Fprintf(stderr, "kvtool: %s does not replay\n", path)
		return exitProblems
	}
	fmt.Fprintf(stdout, "\nversion after %s: log number %d, next file number %d, last sequence %d, flushed %d, synced %d\n",
		plural(len(h.edits), "edit"), state.LogNum, state.NextFileNum, state.LastSeq, state.FlushedSeq, state.SyncedSeq)
	printVersion(stdout, state.Version)
	return exitOK
}

// printEdit prints one edit, a field per line.
func printEdit(w io.Writer, n int, he historyEdit) {
	e := &he.edit
	kind := ""
	if e.HasLogNum && e.HasNextFileNum && e.HasLastSeq && n == 1 {
		kind = " (snapshot)"
	}
	fmt.Fprintf(w, "edit %d at offset %d%s\n", n, he.offset, kind)
	t := newTable(w)
	if e.HasLogNum {
		row(t, "  log number", e.LogNum)
	}
	if e.HasNextFileNum {
		row(t, "  next file number", e.NextFileNum)
	}
	if e.HasLastSeq {
		row(t, "  last sequence", e.LastSeq)
	}
	if e.HasFlushedSeq {
		row(t, "  flushed sequence", e.FlushedSeq)
	}
	if e.HasSyncedSeq {
		row(t, "  synced sequence", e.SyncedSeq)
	}
	if e.DBID != nil {
		row(t, "  database id", string(e.DBID))
	}
	for _, name := range e.ForeignFiles {
		row(t, "  foreign file", name)
	}
	for _, cp := range e.CompactPointers {
		row(t, "  compact pointer", fmt.Sprintf("L%d %s", cp.Level, fmtUserKey(cp.Key)))
	}
	for _, d := range e.DeletedFiles {
		row(t, "  delete", fmt.Sprintf("L%d", d.Level), base.MakeFilename(base.FileTypeTable, d.FileNum))
	}
	for _, nf := range e.NewFiles {
		m := nf.Meta
		row(t, "  add", fmt.Sprintf("L%d", nf.Level), base.MakeFilename(base.FileTypeTable, m.FileNum),
			humanize.IBytes(m.Size), fmt.Sprintf("seqs %d-%d", m.SmallestSeq, m.LargestSeq),
			shorten(fmtKey(m.Smallest))+" .. "+shorten(fmtKey(m.Largest)))
	}
	if len(e.CompactPointers)+len(e.DeletedFiles)+len(e.NewFiles)+len(e.ForeignFiles) == 0 &&
		!e.HasLogNum && !e.HasNextFileNum && !e.HasLastSeq && !e.HasFlushedSeq && !e.HasSyncedSeq && e.DBID == nil {
		row(t, "  (empty edit)")
	}
	t.Flush()
}

// printVersion lists the tables of every non-empty level.
func printVersion(w io.Writer, v *manifest.Version) {
	t := newTable(w)
	row(t, "LEVEL", "TABLE", "SIZE", "SEQS", "SMALLEST", "LARGEST")
	n := 0
	for level, files := range v.Levels {
		for _, m := range files {
			n++
			row(t, fmt.Sprintf("L%d", level), base.MakeFilename(base.FileTypeTable, m.FileNum), humanize.IBytes(m.Size),
				fmt.Sprintf("%d-%d", m.SmallestSeq, m.LargestSeq),
				shorten(fmtKey(m.Smallest)), shorten(fmtKey(m.Largest)))
		}
	}
	if n == 0 {
		row(t, "(no tables)")
	}
	t.Flush()
}
