package main

import (
	"encoding/json"
	"fmt"
)

// severity ranks a finding. Only errors (and warnings under -strict) make
// check exit non-zero.
type severity uint8

const (
	sevNote severity = iota
	sevWarning
	sevError
)

func (s severity) String() string {
	switch s {
	case sevNote:
		return "NOTE"
	case sevWarning:
		return "WARN"
	case sevError:
		return "ERROR"
	}
	return fmt.Sprintf("severity(%d)", uint8(s))
}

// MarshalJSON writes the severity as its name, so JSON readers need no
// table of numbers.
func (s severity) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// finding is one thing check has to say about a file (or the database, when
// File is empty).
type finding struct {
	Severity severity `json:"severity"`
	File     string   `json:"file,omitempty"`
	Message  string   `json:"message"`
}

// findings collects what a check found, in the order found.
type findings struct {
	list []finding
}

func (f *findings) add(sev severity, file, format string, args ...any) {
	f.list = append(f.list, finding{Severity: sev, File: file, Message: fmt.Sprintf(format, args...)})
}

func (f *findings) errorf(file, format string, args ...any) { f.add(sevError, file, format, args...) }
func (f *findings) warnf(file, format string, args ...any)  { f.add(sevWarning, file, format, args...) }
func (f *findings) notef(file, format string, args ...any)  { f.add(sevNote, file, format, args...) }

// count returns how many findings have severity s.
func (f *findings) count(s severity) int {
	n := 0
	for _, x := range f.list {
		if x.Severity == s {
			n++
		}
	}
	return n
}
