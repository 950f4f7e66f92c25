package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/server/fsm"
	"github.com/bloomkv/bloomkv/server/raftstore"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Peer is one member of a cluster's initial configuration.
type Peer struct {
	ID       string // raft server id
	RaftAddr string // its raft transport address
}

// Config configures a Node. Dir is required; every other zero field means
// its default.
type Config struct {
	ID            string // raft server id (default "node1")
	Dir           string // data directory
	RaftAddr      string // raft TCP bind address (default 127.0.0.1:7379)
	RaftAdvertise string // raft address peers dial (default: the bound address)
	Addr          string // RESP client listen address (default 127.0.0.1:6379)
	AdvertiseAddr string // RESP address given to clients sent to the leader (default: the bound address)

	// Peers is the initial configuration, this node included, for a new
	// cluster whose members all start with the same list. Join is the
	// RESP address of a member of a running cluster to join instead. With
	// neither, a new node starts a one-node cluster. Both are ignored once
	// the node has raft state.
	Peers []Peer
	Join  string

	// RaftDial maps a peer's server id to the address this node dials to
	// reach it, instead of the address in the cluster configuration: a
	// proxy, an address translated on the way, or the fault proxy of the
	// linearizability checker, which sits on each link between two nodes.
	RaftDial map[string]string

	// StaleReads makes every connection read this node's state without a
	// leader check (a connection can also ask with READONLY).
	StaleReads bool

	// MaxBulk is the longest bulk string a client may send (default 16 MiB),
	// MaxCommand the most bytes of one command (default 64 MiB). A client
	// past either gets a protocol error and is disconnected.
	MaxBulk, MaxCommand int

	ApplyTimeout time.Duration // how long a write waits to be committed (default 10 s)

	// Raft timing and log compaction (defaults: raft.DefaultConfig's, but
	// MaxAppendEntries 256).
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout, CommitTimeout time.Duration
	SnapshotInterval                                                     time.Duration
	SnapshotThreshold, TrailingLogs                                      uint64

	// MetricsAddr, if set, is the address to serve metrics on in
	// Prometheus's text format (docs/server.md, "Metrics").
	MetricsAddr string

	// ConnGoroutines serves each client connection on a goroutine of its
	// own, reading through Go's network poller, instead of every
	// connection from one event loop (eventloop.go; docs/server.md,
	// "Throughput against Redis").
	ConnGoroutines bool

	NoSync    bool         // raft log writes without fsync: tests only
	Logger    *slog.Logger // default slog.Default()
	LogOutput io.Writer    // raft's own log (default os.Stderr)
	LogLevel  string       // raft's log level (default "warn")
	FSM       *fsm.Options // state machine options
}

// Node is one member of a bloomkv cluster: raft over TCP, the state
// machine in bloomkv, and the RESP server.
type Node struct {
	cfg      Config // constant after Start
	raft     *raft.Raft
	fsm      *fsm.FSM
	logs     *raftstore.Store
	trans    *raft.NetworkTransport
	respLn   net.Listener
	respSrv  respServer
	respDone chan struct{}
	loop     *loopServer // nil with Config.ConnGoroutines
	cursors  *cursorTable
	id       raft.ServerID

	// readyAt is 0 until the node, as leader, has seen its election
	// barrier applied; then that barrier's index. Every entry at or below
	// it has been through the state machine, and every entry this leader
	// appends after it reaches the state machine (commands and
	// configuration changes: raft passes both to a BatchingFSM), so a read
	// index above it is one the state machine will reach.
	readyAt atomic.Uint64
	clients atomic.Int64

	// Whether this node is the only voter, asked of raft once per term and
	// membership change (propose.go, voterCheck). cfgGen is odd while
	// changeMembership runs, which holds cfgMu (one change at a time), and
	// grows by 2 with every PeerObservation of raft.
	voters atomic.Pointer[voterCheck]
	cfgGen atomic.Uint64
	cfgMu  sync.Mutex

	// The write batcher (propose.go): proposals queue for it; inFlight
	// holds a token per group in raft; groups carries them, in log
	// order, to the goroutine that answers them.
	proposals chan *proposal
	inFlight  chan struct{}
	groups    chan *group
	reads     readGate
	metrics   *nodeMetrics

	metricsLn  net.Listener // nil without Config.MetricsAddr
	metricsSrv *http.Server

	stop   chan struct{}
	bg     sync.WaitGroup
	closed sync.Once
}

func (c *Config) withDefaults() (Config, error) {
	r := *c
	if r.Dir == "" {
		return r, errors.New("bloomkv/server: Config.Dir is required")
	}
	if r.ID == "" {
		r.ID = "node1"
	}
	if r.RaftAddr == "" {
		r.RaftAddr = "127.0.0.1:7379"
	}
	if r.Addr == "" {
		r.Addr = "127.0.0.1:6379"
	}
	if r.MaxBulk <= 0 {
		r.MaxBulk = 16 << 20
	}
	if r.MaxCommand <= 0 {
		r.MaxCommand = 64 << 20
	}
	if r.ApplyTimeout <= 0 {
		r.ApplyTimeout = 10 * time.Second
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.LogOutput == nil {
		r.LogOutput = os.Stderr
	}
	if r.LogLevel == "" {
		r.LogLevel = "warn"
	}
	return r, nil
}

func (c *Config) raftConfig(logger hclog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.ID)
	rc.Logger = logger
	rc.MaxAppendEntries = 256
	// BatchApplyCh off: with it, raft queues Apply and Barrier futures in
	// a buffered channel that its leader loop does not drain when it shuts
	// down, so a future queued at that moment is never answered and
	// whoever waits on it (the completer, watchLeadership) waits forever,
	// and Close with it (found in review, issue 29: 4 of 10 barriers
	// taken at shutdown never answered). The batcher hands raft one group
	// at a time, which the unbuffered channel takes as soon as the leader
	// loop is free.
	rc.BatchApplyCh = false
	set := func(dst *time.Duration, v time.Duration) {
		if v > 0 {
			*dst = v
		}
	}
	set(&rc.HeartbeatTimeout, c.HeartbeatTimeout)
	set(&rc.ElectionTimeout, c.ElectionTimeout)
	set(&rc.LeaderLeaseTimeout, c.LeaderLeaseTimeout)
	set(&rc.CommitTimeout, c.CommitTimeout)
	set(&rc.SnapshotInterval, c.SnapshotInterval)
	if c.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = c.SnapshotThreshold
	}
	if c.TrailingLogs > 0 {
		rc.TrailingLogs = c.TrailingLogs
	}
	return rc
}

// Start opens the node's stores in cfg.Dir, starts raft and the RESP
// server, and, for a new node, bootstraps or joins its cluster.
//
// Dir holds raft/ (the raft log and stable store, a bloomkv database),
// snapshots/ (raft's snapshot files) and state/ (the state machine).
func Start(c Config) (n *Node, err error) {
	cfg, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	n = &Node{cfg: cfg, id: raft.ServerID(cfg.ID), cursors: newCursorTable(), stop: make(chan struct{}), respDone: make(chan struct{}),
		proposals: make(chan *proposal, groupMaxCmds), inFlight: make(chan struct{}, groupsInFlight), groups: make(chan *group, groupsInFlight),
		metrics: newNodeMetrics()}
	// The cleanups close what Start opened when it fails. They use self,
	// not n: a failing return sets the result n to nil before they run.
	self := n
	var cleanup []func()
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()
	hl := newRaftLogger(hclog.New(&hclog.LoggerOptions{Name: "raft", Output: cfg.LogOutput, Level: hclog.LevelFromString(cfg.LogLevel)}))

	n.logs, err = raftstore.Open(filepath.Join(cfg.Dir, "raft"), &raftstore.Options{NoSync: cfg.NoSync, DB: &bloomkv.Options{Logger: cfg.Logger}})
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { self.logs.Close() })
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, hl.Named("snapshots"))
	if err != nil {
		return nil, fmt.Errorf("bloomkv/server: %w", err)
	}
	fo := fsm.Options{}
	if cfg.FSM != nil {
		fo = *cfg.FSM
	}
	if fo.Logger == nil {
		fo.Logger = cfg.Logger
	}
	n.fsm, err = fsm.Open(filepath.Join(cfg.Dir, "state"), &fo)
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { self.fsm.Close() })

	var advertise net.Addr
	if cfg.RaftAdvertise != "" {
		if advertise, err = net.ResolveTCPAddr("tcp", cfg.RaftAdvertise); err != nil {
			return nil, fmt.Errorf("bloomkv/server: raft advertise address: %w", err)
		}
	}
	tc := &raft.NetworkTransportConfig{MaxPool: 3, Timeout: 10 * time.Second, Logger: hl.Named("transport")}
	if len(cfg.RaftDial) > 0 {
		tc.ServerAddressProvider = dialMap(cfg.RaftDial)
	}
	n.trans, err = raft.NewTCPTransportWithConfig(cfg.RaftAddr, advertise, tc)
	if err != nil {
		return nil, fmt.Errorf("bloomkv/server: raft transport on %s: %w", cfg.RaftAddr, err)
	}
	cleanup = append(cleanup, func() { self.trans.Close() })

	rc := cfg.raftConfig(hl)
	existing, err := raft.HasExistingState(n.logs, n.logs, snaps)
	if err != nil {
		return nil, fmt.Errorf("bloomkv/server: %w", err)
	}
	n.raft, err = raft.NewRaft(rc, timedFSM{n.fsm, n.metrics.apply}, n.logs, n.logs, snaps, n.trans)
	if err != nil {
		return nil, fmt.Errorf("bloomkv/server: %w", err)
	}
	cleanup = append(cleanup, func() { self.raft.Shutdown().Error() })
	// raft calls the filter in its own goroutine as it starts or stops
	// replicating to a peer, just after it took a new configuration: a
	// change made on Node.Raft directly, not through changeMembership,
	// still ends the sole-voter check (propose.go, voterCheck).
	n.raft.RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		if _, ok := o.Data.(raft.PeerObservation); ok {
			self.cfgGen.Add(2)
		}
		return false
	}))
	if !existing && cfg.Join == "" {
		servers := []raft.Server{{ID: n.id, Address: n.trans.LocalAddr()}}
		if len(cfg.Peers) > 0 {
			servers = servers[:0]
			self := false
			for _, p := range cfg.Peers {
				servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
				self = self || p.ID == cfg.ID
			}
			if !self {
				return nil, fmt.Errorf("bloomkv/server: the peer list does not hold this node's id %q", cfg.ID)
			}
		}
		if err := n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
			return nil, fmt.Errorf("bloomkv/server: bootstrap: %w", err)
		}
	}

	if cfg.MetricsAddr != "" {
		if err := n.serveMetrics(); err != nil {
			return nil, fmt.Errorf("bloomkv/server: metrics on %s: %w", cfg.MetricsAddr, err)
		}
		cleanup = append(cleanup, func() { self.metricsSrv.Close() })
	}

	n.respLn, err = net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("bloomkv/server: listen on %s: %w", cfg.Addr, err)
	}
	if n.cfg.AdvertiseAddr == "" {
		n.cfg.AdvertiseAddr = n.respLn.Addr().String()
	}
	n.respSrv.conns = make(map[*respConn]struct{})
	if !cfg.ConnGoroutines {
		if err := n.startLoop(); err != nil {
			n.respLn.Close()
			return nil, err
		}
		cleanup = append(cleanup, func() { self.loop.stop() })
	}
	go func() {
		defer close(n.respDone)
		n.serveRESP(n.respLn)
	}()

	n.bg.Add(3)
	go n.watchLeadership()
	go n.runBatcher()
	go n.runCompleter()
	if !existing && cfg.Join != "" {
		if err := n.join(cfg.Join); err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

// dialMap overrides the addresses a node dials its peers at; a peer not
// in it is dialed at its configured address (raft falls back to that on
// an error).
type dialMap map[string]string

func (m dialMap) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	if a, ok := m[string(id)]; ok {
		return raft.ServerAddress(a), nil
	}
	return "", fmt.Errorf("no dial address for %s", id)
}

// Addr returns the address the RESP server listens on.
func (n *Node) Addr() string { return n.respLn.Addr().String() }

// RaftAddr returns the node's raft transport address.
func (n *Node) RaftAddr() string { return string(n.trans.LocalAddr()) }

// ID returns the node's raft server id.
func (n *Node) ID() string { return n.cfg.ID }

// Raft returns the node's raft instance.
func (n *Node) Raft() *raft.Raft { return n.raft }

// FSM returns the node's state machine.
func (n *Node) FSM() *fsm.FSM { return n.fsm }

// IsLeader reports whether this node is the leader and ready to serve
// linearizable reads.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader && n.readyAt.Load() != 0 }

// Close stops the RESP server and raft and closes the stores. A node that
// is closed as leader does not hand leadership over: the others elect a
// new leader after their election timeout.
func (n *Node) Close() error {
	var err error
	n.closed.Do(func() {
		close(n.stop)
		if n.metricsSrv != nil {
			n.metricsSrv.Close()
		}
		n.respLn.Close()
		n.respSrv.closeConns()
		<-n.respDone
		if n.loop != nil {
			n.loop.stop()
		}
		err = n.raft.Shutdown().Error()
		n.bg.Wait()
		if cerr := n.trans.Close(); err == nil {
			err = cerr
		}
		if cerr := n.fsm.Close(); err == nil {
			err = cerr
		}
		if cerr := n.logs.Close(); err == nil {
			err = cerr
		}
	})
	return err
}

// watchLeadership runs while the node is up: each time it becomes leader
// it waits until its state includes every entry committed before (a
// barrier), then serves linearizable reads, and registers its client
// address so that followers can send clients to it.
func (n *Node) watchLeadership() {
	defer n.bg.Done()
	for {
		select {
		case <-n.stop:
			return
		case leader := <-n.raft.LeaderCh():
			n.readyAt.Store(0)
			if !leader {
				continue
			}
			barrier := n.raft.Barrier(n.cfg.ApplyTimeout)
			if err := barrier.Error(); err != nil {
				n.cfg.Logger.Warn("bloomkv/server: barrier after election", "err", err)
				continue
			}
			at := barrier.(raft.IndexFuture).Index()
			if addr, _ := n.fsm.Node(n.cfg.ID); addr != n.cfg.AdvertiseAddr {
				c := fsm.Command{Op: fsm.OpSetNode, Key: []byte(n.cfg.ID), Value: []byte(n.cfg.AdvertiseAddr)}
				if err := n.raft.Apply(c.Encode(), n.cfg.ApplyTimeout).Error(); err != nil {
					n.cfg.Logger.Warn("bloomkv/server: registering the leader's address", "err", err)
				}
			}
			if n.raft.State() == raft.Leader {
				n.readyAt.Store(at)
			}
		}
	}
}

// errNotLeader is the error a follower answers with. Its message is the
// RESP error a client sees (docs/server.md, "Errors").
func (n *Node) errNotLeader() error {
	_, id := n.raft.LeaderWithID()
	if id == "" {
		return errors.New("TRYAGAIN no leader is elected yet")
	}
	if id == n.id {
		return errors.New("TRYAGAIN this node was just elected leader and is catching up")
	}
	addr, err := n.fsm.Node(string(id))
	if err != nil || addr == "" {
		return fmt.Errorf("TRYAGAIN the leader %s has not published its address yet", id)
	}
	return fmt.Errorf("NOTLEADER %s", addr)
}

// submit hands a write to raft without waiting for it, or refuses it when
// its log entry would be larger than the raft log stores: handed to raft,
// the log store would fail to store it and the leader would step down
// (issue 32), and any client could do that again and again.
func (n *Node) submit(c *fsm.Command) (raft.ApplyFuture, error) {
	data := c.Encode()
	if len(data) > raftstore.MaxData {
		return nil, fmt.Errorf("ERR bloomkv: this command's log entry would be %d bytes, more than the %d one raft log entry holds; send it as several commands", len(data), raftstore.MaxData)
	}
	return n.raft.Apply(data, n.cfg.ApplyTimeout), nil
}

// result waits for a submitted write and returns its result, or the error
// to give the client.
func (n *Node) result(f raft.ApplyFuture) (*fsm.Result, error) {
	if err := f.Error(); err != nil {
		return nil, n.applyErr(err)
	}
	r, ok := f.Response().(*fsm.Result)
	if !ok {
		return nil, errors.New("ERR internal: no result")
	}
	return r, nil
}

// applyErr is the error a client gets for a write whose raft apply
// failed with err.
func (n *Node) applyErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return n.errNotLeader()
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return errors.New("TRYAGAIN the write was not accepted in time; it was not applied")
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("ERR leadership was lost while the write was in flight: it may or may not be applied (%v)", err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return errShuttingDown
	}
	return fmt.Errorf("ERR %v", err)
}

// join asks the cluster member at addr (a RESP address) to add this node,
// following NOTLEADER answers to the leader, until it succeeds or the
// apply timeout passes.
func (n *Node) join(addr string) error {
	deadline := time.Now().Add(3 * n.cfg.ApplyTimeout)
	var last error
	for time.Now().Before(deadline) {
		reply, err := respCall(addr, "RAFT.JOIN", n.cfg.ID, n.RaftAddr(), n.cfg.AdvertiseAddr)
		switch {
		case err != nil:
			last = err
		case reply == "+OK":
			return nil
		case strings.HasPrefix(reply, "-NOTLEADER "):
			addr = strings.TrimPrefix(reply, "-NOTLEADER ")
			continue
		default:
			last = errors.New(strings.TrimPrefix(reply, "-"))
		}
		select {
		case <-n.stop:
			return errors.New("bloomkv/server: closed while joining")
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("bloomkv/server: joining through %s: %v", addr, last)
}

// respCall sends one command to a RESP server and returns the first line
// of its reply.
func respCall(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}
