package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestKillKeepsAcknowledgedSets: kill -9 of a one-node kvserver while
// four clients pipeline SETs through the event loop and group commit;
// after a restart every SET that was answered OK is there with its value.
func TestKillKeepsAcknowledgedSets(t *testing.T) {
	ctx := context.Background()
	var (
		args   []string
		addr   string
		node   *exec.Cmd
		c      *redis.Client
		exited chan struct{} // closed once node has exited and been reaped
	)
	// A port freePort found free can still be taken before kvserver binds
	// it (freeport.Addr): then the node exits at once, and the test starts
	// it again on other ports.
	for attempt := 1; ; attempt++ {
		dir := t.TempDir()
		addr = freePort(t)
		args = []string{"-dir", dir, "-addr", addr, "-raft", freePort(t), "-log-level", "error"}
		node = startQuiet(t, args...)
		exited = make(chan struct{})
		go func(node *exec.Cmd, exited chan struct{}) { node.Wait(); close(exited) }(node, exited)
		c = redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
			ReadTimeout: 20 * time.Second, WriteTimeout: 20 * time.Second})
		defer c.Close()
		up := false
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if c.Set(ctx, "probe", "1", 0).Err() == nil {
				up = true
				break
			}
			select {
			case <-exited:
				deadline = time.Now() // it died: a port was taken
			default:
			}
		}
		if up {
			break
		}
		if attempt == 3 {
			t.Fatal("the node did not take a write in 20 s, three times")
		}
		node.Process.Kill()
		<-exited
	}

	// Four clients pipeline SETs of their own keys and count the OKs they
	// read, in order; the node is killed while they do.
	const clients, burst = 4, 32
	acked := make([]int, clients)
	done := make(chan int, clients)
	for w := range clients {
		go func() {
			defer func() { done <- w }()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer conn.Close()
			r := bufio.NewReader(conn)
			for i := 0; ; i += burst {
				var b strings.Builder
				for k := i; k < i+burst; k++ {
					fmt.Fprintf(&b, "SET w%d:%d v%d\r\n", w, k, k)
				}
				if _, err := io.WriteString(conn, b.String()); err != nil {
					return
				}
				for k := i; k < i+burst; k++ {
					line, err := r.ReadString('\n')
					if err != nil || line != "+OK\r\n" {
						return
					}
					acked[w] = k + 1
				}
			}
		}()
	}
	time.Sleep(400 * time.Millisecond)
	node.Process.Kill() // SIGKILL
	<-exited
	for range clients {
		<-done
	}
	total := 0
	for _, a := range acked {
		total += a
	}
	if total == 0 {
		t.Fatal("no SET was answered before the kill")
	}

	startQuiet(t, args...)
	deadline := time.Now().Add(30 * time.Second)
	for c.Get(ctx, "probe").Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the restarted node did not answer a read in 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for w, a := range acked {
		gets := make([]*redis.StringCmd, a)
		if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for k := range a {
				gets[k] = p.Get(ctx, fmt.Sprintf("w%d:%d", w, k))
			}
			return nil
		}); err != nil {
			t.Fatalf("client %d's keys: %v", w, err)
		}
		for k, g := range gets {
			if v, err := g.Result(); err != nil || v != fmt.Sprint("v", k) {
				t.Fatalf("client %d's SET %d was answered OK before the kill; after the restart GET gives %q, %v", w, k, v, err)
			}
		}
	}
	t.Logf("%d SETs answered before kill -9, all present after the restart", total)
}
