package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes (see doc.go).
const (
	exitOK       = 0
	exitProblems = 1
	exitUsage    = 2
)

const usageText = `usage: kvtool COMMAND [flags] ARG

commands:
  check [-json] [-strict] [-q] DIR   verify checksums, manifest, levels, filters and logs
  sst [-blocks] FILE                 print a table's properties, key range, blocks and filter
  manifest DIR|MANIFEST              print the version history edit by edit
  repair [-json] DIR                 rebuild a database Open refuses, moving what it
                                     does not keep to DIR/lost/

keys print as quoted text when every byte is printable ASCII, otherwise as
0x and hex; every command takes -hex to print them all in hex.
check, sst and manifest only read: they take no lock and change no file.
repair takes the LOCK, writes new tables and a new manifest, and deletes nothing.
exit status: 0 no errors (repair: repaired), 1 problems found (repair: not
repaired, or not all of it), 2 usage error
`

// run is main without the process: it parses args, writes to stdout and
// stderr, and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "check":
		return runCheck(rest, stdout, stderr)
	case "sst":
		return runSST(rest, stdout, stderr)
	case "manifest":
		return runManifest(rest, stdout, stderr)
	case "repair":
		return runRepair(rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	fmt.Fprintf(stderr, "kvtool: unknown command %q\n\n%s", cmd, usageText)
	return exitUsage
}

// parseFlags parses a command's flags and requires exactly one argument.
// ok false means the caller returns code.
func parseFlags(fs *flag.FlagSet, args []string, argName string, stderr io.Writer) (arg string, code int, ok bool) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", exitOK, false
		}
		return "", exitUsage, false
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "kvtool %s: want exactly one %s, got %d arguments\n", fs.Name(), argName, fs.NArg())
		fs.Usage()
		return "", exitUsage, false
	}
	return fs.Arg(0), exitOK, true
}

// newFlagSet returns a flag set whose usage line names the command.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	hexKeys.Store(false)
	fs.BoolFunc("hex", "print every key in hex (default: each key as quoted text when all its bytes are printable ASCII, else as 0x and hex)", func(s string) error {
		v, err := strconv.ParseBool(s)
		hexKeys.Store(v)
		return err
	})
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: kvtool %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}
