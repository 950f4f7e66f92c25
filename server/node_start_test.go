package server

import (
	"net"
	"testing"
	"time"
)

// TestStartFailsCleanly: a node whose client or raft address is taken
// fails to start with an error, closing what it had opened (the same
// directory then starts), instead of panicking in its cleanup.
func TestStartFailsCleanly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, field := range []string{"Addr", "RaftAddr"} {
		cfg := testConfig(t, "n1")
		if field == "Addr" {
			cfg.Addr = ln.Addr().String()
		} else {
			cfg.RaftAddr = ln.Addr().String()
		}
		if n, err := Start(cfg); err == nil {
			n.Close()
			t.Fatalf("%s taken: Start succeeded", field)
		}
		cfg.Addr, cfg.RaftAddr = "127.0.0.1:0", "127.0.0.1:0"
		n := startNode(t, cfg) // the stores were closed: the directory opens again
		n.Close()
	}
}

// TestRaftAnswersFuturesAtShutdown: raft, as the node configures it,
// answers every Apply and Barrier future made around its shutdown. With
// BatchApplyCh, futures queued in its buffered channel as it shut down
// were never answered, and the completer or watchLeadership waiting on
// one kept Close from returning (found in review).
func TestRaftAnswersFuturesAtShutdown(t *testing.T) {
	n, _ := singleNode(t)
	if err := n.raft.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		f := n.raft.Barrier(time.Second)
		done := make(chan error, 1)
		go func() { done <- f.Error() }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatalf("barrier %d after shutdown: never answered", i)
		}
	}
}
