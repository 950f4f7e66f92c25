package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// outFile is an output file a flag names (-json, -csv, -plot). It is
// opened for writing before the benchmark starts, so a path that cannot be
// written fails at once rather than after the whole run, and filled when
// the report is ready.
type outFile struct {
	flag, path string
	f          *os.File // nil once written or abandoned
	// created: the file did not exist before kvbench opened it, so a run
	// that fails removes it rather than leave an empty file behind. A file
	// that existed is not truncated until the report is written.
	created bool
}

// openOutFile opens path for writing on behalf of flag, creating it if
// need be, without truncating it.
func openOutFile(flag, path string) (*outFile, error) {
	o := &outFile{flag: flag, path: path}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	o.created = err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, os.O_WRONLY, 0)
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is in the message already
		}
		return nil, fmt.Errorf("%s %s: cannot open it for writing: %w", flag, path, err)
	}
	o.f = f
	return o, nil
}

// write replaces the file's contents with what fill writes, and closes it.
func (o *outFile) write(fill func(io.Writer) error) error {
	f := o.f
	o.f = nil
	var err error
	if info, serr := f.Stat(); serr == nil && info.Mode().IsRegular() {
		err = f.Truncate(0) // not a pipe or a terminal (-json /dev/stdout)
	}
	if err == nil {
		err = fill(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", o.flag, o.path, err)
	}
	return nil
}

// close closes a file that was written while the run went on (a CPU
// profile).
func (o *outFile) close() error {
	f := o.f
	o.f = nil
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s %s: %w", o.flag, o.path, err)
	}
	return nil
}

// abandon closes a file that was not written, removing it if kvbench
// created it. It does nothing once the file is written.
func (o *outFile) abandon() {
	if o == nil || o.f == nil {
		return
	}
	o.f.Close()
	o.f = nil
	if o.created {
		os.Remove(o.path)
	}
}

// outFiles are the output files of one run; nil for a flag not given.
type outFiles struct {
	json, csv, plot *outFile
	cpuProfile      *outFile // written while the benchmark runs
	memProfile      *outFile
}

func (outs *outFiles) all() []*outFile {
	var out []*outFile
	for _, o := range []*outFile{outs.json, outs.csv, outs.plot, outs.cpuProfile, outs.memProfile} {
		if o != nil {
			out = append(out, o)
		}
	}
	return out
}

// abandon abandons every file not written yet.
func (outs *outFiles) abandon() {
	for _, o := range outs.all() {
		o.abandon()
	}
}

// openOutFiles opens every output file cfg names. Two flags naming the
// same regular file would overwrite each other, so that is refused too.
func openOutFiles(cfg *config) (*outFiles, error) {
	outs := &outFiles{}
	for _, x := range []struct {
		dst        **outFile
		flag, path string
	}{
		{&outs.json, "-json", cfg.jsonPath},
		{&outs.csv, "-csv", cfg.csvPath},
		{&outs.plot, "-plot", cfg.plotPath},
		{&outs.cpuProfile, "-cpuprofile", cfg.cpuProfile},
		{&outs.memProfile, "-memprofile", cfg.memProfile},
	} {
		if x.path == "" {
			continue
		}
		o, err := openOutFile(x.flag, x.path)
		if err != nil {
			outs.abandon()
			return nil, err
		}
		*x.dst = o
	}
	opened := outs.all()
	for i, a := range opened {
		ai, err := a.f.Stat()
		if err != nil || !ai.Mode().IsRegular() {
			continue
		}
		for _, b := range opened[i+1:] {
			if bi, err := b.f.Stat(); err == nil && os.SameFile(ai, bi) {
				outs.abandon()
				return nil, fmt.Errorf("%s %s and %s %s are the same file: each would overwrite the other", a.flag, a.path, b.flag, b.path)
			}
		}
	}
	return outs, nil
}
