// Command kvserver runs one node of a bloomkv cluster: raft over TCP for
// replication, the state in bloomkv, and a RESP2 server for clients (Redis
// clients and redis-cli work).
//
//	go run ./cmd/kvserver -dir /tmp/kv            # a one-node cluster on 127.0.0.1:6379
//
//	# three nodes, all started with the same -peers
//	kvserver -id n1 -dir d1 -addr :6381 -raft 127.0.0.1:7381 -peers n1=127.0.0.1:7381,n2=127.0.0.1:7382,n3=127.0.0.1:7383
//	kvserver -id n2 -dir d2 -addr :6382 -raft 127.0.0.1:7382 -peers ...
//	kvserver -id n3 -dir d3 -addr :6383 -raft 127.0.0.1:7383 -peers ...
//
//	# or grow a running cluster: start a node that joins through any member
//	kvserver -id n4 -dir d4 -addr :6384 -raft 127.0.0.1:7384 -join 127.0.0.1:6381
//
// See server/README.md to get started, and docs/server.md for the commands,
// the errors and the read modes.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // served only with -pprof-addr
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/bloomkv/bloomkv/server"
)

func main() {
	var cfg server.Config
	var peers, dial, pprofAddr string
	flag.StringVar(&cfg.ID, "id", "node1", "raft server id of this node (unique in the cluster)")
	flag.StringVar(&cfg.Dir, "dir", "", "data directory (required)")
	flag.StringVar(&cfg.RaftAddr, "raft", "127.0.0.1:7379", "raft TCP address to bind")
	flag.StringVar(&cfg.RaftAdvertise, "raft-advertise", "", "raft address other nodes dial (default: the bound address)")
	flag.StringVar(&cfg.Addr, "addr", "127.0.0.1:6379", "RESP client address to listen on")
	flag.StringVar(&cfg.AdvertiseAddr, "advertise", "", "client address given to clients sent to this node as leader (default: the bound address)")
	flag.StringVar(&peers, "peers", "", "initial cluster, this node included: id=raftaddr,id=raftaddr,... (new nodes only)")
	flag.StringVar(&cfg.Join, "join", "", "client address of a running cluster member to join (new nodes only)")
	flag.BoolVar(&cfg.StaleReads, "stale-reads", false, "serve reads from this node's state without a leader check (per connection: READONLY)")
	flag.IntVar(&cfg.MaxBulk, "max-bulk", 16<<20, "longest bulk string a client may send, in bytes")
	flag.BoolVar(&cfg.ConnGoroutines, "conn-goroutines", false, "serve each client connection on a goroutine of its own instead of from the event loop")
	flag.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address at /metrics, e.g. 127.0.0.1:9121 (default: off)")
	flag.StringVar(&pprofAddr, "pprof-addr", "", "serve Go's net/http/pprof profiles on this address, e.g. 127.0.0.1:6060 (default: off)")
	flag.StringVar(&cfg.LogLevel, "log-level", "warn", "raft's log level: trace, debug, info, warn, error")
	flag.StringVar(&dial, "raft-dial", "", "dial these peers at these addresses instead of their configured ones: id=addr,id=addr,...")
	flag.DurationVar(&cfg.HeartbeatTimeout, "heartbeat-timeout", 0, "raft's heartbeat timeout (default 1s)")
	flag.DurationVar(&cfg.ElectionTimeout, "election-timeout", 0, "raft's election timeout (default 1s)")
	flag.DurationVar(&cfg.LeaderLeaseTimeout, "leader-lease-timeout", 0, "raft's leader lease timeout (default 500ms)")
	gcPercent := flag.Int("gc-percent", 300, "Go's GOGC for this process: heap growth in percent before a collection (GOGC in the environment wins)")
	flag.Parse()
	if os.Getenv("GOGC") == "" {
		// Go's default, 100, collected about every 2 ms under pipelined
		// writes, 6-10% of the CPU time; 300 cut the CPU time per
		// pipelined SET and GET by 10-13% for some 20 MB more memory
		// (issue 29, docs/server.md, "Throughput against Redis").
		debug.SetGCPercent(*gcPercent)
	}
	if cfg.Dir == "" {
		fmt.Fprintln(os.Stderr, "kvserver: -dir is required")
		flag.Usage()
		os.Exit(2)
	}
	if peers != "" {
		for _, p := range strings.Split(peers, ",") {
			id, addr, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || id == "" || addr == "" {
				fmt.Fprintf(os.Stderr, "kvserver: -peers: %q is not id=raftaddr\n", p)
				os.Exit(2)
			}
			cfg.Peers = append(cfg.Peers, server.Peer{ID: id, RaftAddr: addr})
		}
	}
	if dial != "" {
		cfg.RaftDial = map[string]string{}
		for _, p := range strings.Split(dial, ",") {
			id, addr, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || id == "" || addr == "" {
				fmt.Fprintf(os.Stderr, "kvserver: -raft-dial: %q is not id=addr\n", p)
				os.Exit(2)
			}
			cfg.RaftDial[id] = addr
		}
	}
	if cfg.Join != "" && len(cfg.Peers) > 0 {
		fmt.Fprintln(os.Stderr, "kvserver: -join and -peers exclude each other")
		os.Exit(2)
	}
	if pprofAddr != "" {
		// The default mux holds only pprof's handlers: the metrics
		// endpoint has its own.
		go func() {
			if err := http.ListenAndServe(pprofAddr, nil); err != nil {
				slog.Error("kvserver: pprof", "err", err)
			}
		}()
	}
	n, err := server.Start(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kvserver:", err)
		os.Exit(1)
	}
	slog.Info("kvserver: serving", "id", n.ID(), "addr", n.Addr(), "raft", n.RaftAddr(), "dir", cfg.Dir)
	if a := n.MetricsAddr(); a != "" {
		slog.Info("kvserver: metrics", "url", "http://"+a+"/metrics")
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	slog.Info("kvserver: shutting down")
	if err := n.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "kvserver:", err)
		os.Exit(1)
	}
}
