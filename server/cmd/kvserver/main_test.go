package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/server/internal/freeport"
	"github.com/redis/go-redis/v9"
)

// The test binary runs kvserver's main when this variable is set, so the
// tests start the real command as a process without building it first.
const runMainEnv = "KVSERVER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// freePort is a loopback address free a moment ago, below the ephemeral
// range (internal/freeport).
func freePort(t *testing.T) string {
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func start(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// stop sends SIGTERM and expects a clean exit.
func stop(t *testing.T, cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kvserver exited with %v after SIGTERM", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("kvserver did not exit after SIGTERM")
	}
}

// TestSingleNodeDefault: kvserver -dir D with no peers serves at once as
// a one-node cluster, and keeps its data across a restart.
func TestSingleNodeDefault(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	addr, raftAddr := freePort(t), freePort(t)
	args := []string{"-dir", dir, "-addr", addr, "-raft", raftAddr, "-log-level", "error"}
	// A restarted server replays its log before the first read's barrier
	// returns: on a loaded machine that can outlast go-redis's default 3 s
	// read timeout, which is not what this test is about.
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		ReadTimeout: 20 * time.Second, WriteTimeout: 20 * time.Second})
	defer c.Close()
	ready := func() {
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := c.Set(ctx, "probe", "1", 0).Err()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("kvserver never took a write: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	srv := start(t, args...)
	ready()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.BFAdd(ctx, "bf", "x").Result(); !ok || err != nil {
		t.Fatalf("BF.ADD = %v, %v", ok, err)
	}
	stop(t, srv)

	srv = start(t, args...)
	ready()
	if v, err := c.Get(ctx, "k").Result(); v != "v" || err != nil {
		t.Fatalf("after a restart GET k = %q, %v", v, err)
	}
	if ok, err := c.BFExists(ctx, "bf", "x").Result(); !ok || err != nil {
		t.Fatalf("after a restart BF.EXISTS = %v, %v", ok, err)
	}
	stop(t, srv)
}

func TestFlagErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no -dir":          {},
		"bad -peers":       {"-dir", t.TempDir(), "-peers", "n1"},
		"-join and -peers": {"-dir", t.TempDir(), "-join", "127.0.0.1:1", "-peers", "n1=127.0.0.1:2"},
	} {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%s: %v, want exit status 2", name, err)
		}
	}
}
