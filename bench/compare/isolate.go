package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// Each engine's memory on its own (issue 31). In one harness process, an
// engine's peak RSS also held what earlier engines left behind: heap the Go
// runtime keeps for reuse, and memory Pebble's cache allocates outside the
// Go heap. So by default every engine run -- one engine, one pairing, one
// run -- happens in a child process: the harness re-executes itself with
// the same flags and -child naming the run, the child writes its engineRun
// as JSON to stdout and its progress lines to stderr (passed through), and
// exits. Its peak RSS is then that engine's alone (plus the harness's own
// few MiB -- key space, value pool -- alike for every engine). -isolate=false
// runs everything in this process, as before (a CPU profile of one process,
// or a debugger). Other methods were weighed: resetting the kernel's peak
// mark between engines (still done; it cannot give back what the previous
// engine's allocator kept) and measuring from the outside with cgroups
// (needs privileges the harness should not ask for).

// childEnv marks a child process. The harness's own binary ignores it (its
// -child flag says what to run); a test binary's TestMain uses it to run
// main instead of the tests.
const childEnv = "BLOOMKV_COMPARE_CHILD"

// childSpec names one engine run for a child: the pairing, the engine and
// the run number (0-based).
type childSpec struct {
	durability durability
	engine     *engine
	run        int
}

func (c childSpec) String() string {
	return fmt.Sprintf("%s,%s,%d", c.durability, c.engine.name, c.run)
}

func parseChildSpec(s string) (childSpec, error) {
	f := strings.Split(s, ",")
	if len(f) != 3 {
		return childSpec{}, fmt.Errorf("-child %q: want durability,engine,run", s)
	}
	i := slices.IndexFunc(durabilities, func(d durability) bool { return d.String() == f[0] })
	if i < 0 {
		return childSpec{}, fmt.Errorf("-child %q: unknown pairing %q", s, f[0])
	}
	e := engineByName(f[1])
	if e == nil {
		return childSpec{}, fmt.Errorf("-child %q: unknown engine %q", s, f[1])
	}
	r, err := strconv.Atoi(f[2])
	if err != nil || r < 0 {
		return childSpec{}, fmt.Errorf("-child %q: bad run number %q", s, f[2])
	}
	return childSpec{durability: durabilities[i], engine: e, run: r}, nil
}

// runChild is the child's whole job: run one engine once and write the
// result as JSON to stdout. With -cpuprofile, it profiles itself into
// PATH.<pairing>.<engine>.run<N>.
func runChild(cfg *config, stdout, stderr io.Writer) int {
	spec, err := parseChildSpec(cfg.child)
	if err != nil {
		fmt.Fprintln(stderr, "compare:", err)
		return 2
	}
	if cfg.cpuProfile != "" {
		stop, err := startCPUProfile(childProfilePath(cfg.cpuProfile, spec))
		if err != nil {
			fmt.Fprintln(stderr, "compare:", err)
			return 1
		}
		defer stop()
	}
	er, err := runEngine(cfg, newRunKeySpace(cfg), spec.engine, spec.durability, spec.run, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "compare:", err)
		return 1
	}
	if er.Memory != nil {
		er.Memory.Isolated = true
	}
	if err := json.NewEncoder(stdout).Encode(er); err != nil {
		fmt.Fprintln(stderr, "compare:", err)
		return 1
	}
	return 0
}

func childProfilePath(path string, spec childSpec) string {
	return fmt.Sprintf("%s.%s.%s.run%d", path, spec.durability, spec.engine.name, spec.run+1)
}

// runEngineChild runs one engine run in a child process (see above).
func runEngineChild(cfg *config, e *engine, d durability, r int, progress io.Writer) (engineRun, error) {
	exe, err := os.Executable()
	if err != nil {
		return engineRun{}, fmt.Errorf("finding the harness's executable to run the engine in a child: %w", err)
	}
	spec := childSpec{durability: d, engine: e, run: r}
	args := append(slices.Clone(cfg.args), "-child", spec.String())
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, progress
	if err := cmd.Run(); err != nil {
		return engineRun{}, fmt.Errorf("child process for %s: %w", spec, err)
	}
	var er engineRun
	if err := json.Unmarshal(out.Bytes(), &er); err != nil {
		return engineRun{}, fmt.Errorf("child process for %s: its result: %w", spec, err)
	}
	return er, nil
}
