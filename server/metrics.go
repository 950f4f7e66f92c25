package server

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/server/fsm"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// nodeMetrics is what the node measures as it runs: the write batcher's
// entries and the read rounds (counters the tests read too), latency
// histograms, and per-command calls and latencies. Everything else on the
// metrics endpoint (raft's state and indexes, the state machine's and the
// engines' counters) is read from its owner at scrape time by
// nodeCollector. All fields are constant after newNodeMetrics; the
// counters and histograms are safe for concurrent use.
type nodeMetrics struct {
	groups, groupCmds, groupBytes, groupErrs atomic.Uint64
	readRounds                               atomic.Uint64
	soleVoterReads                           atomic.Uint64 // read checks of a one-voter leader, no round (propose.go)

	reg        *prometheus.Registry
	commit     prometheus.Histogram // a write entry: handed to raft until committed and applied here
	writeWait  prometheus.Histogram // a write: read until its entry is handed to raft
	writeReply prometheus.Histogram // a write: its entry's result until its reply is ready to write
	apply      prometheus.Histogram // one ApplyBatch of the state machine
	readRound  prometheus.Histogram // one ReadIndex round: commit index noted, leadership confirmed
	cmds       map[string]*cmdMetric
	cmdList    []*cmdMetric // the same, by command.idx
	unknown    *cmdMetric
}

// cmdMetric is one command's calls and latencies. Its series are made at
// its first call, so that commands never called do not fill the page.
type cmdMetric struct {
	name  string
	calls *prometheus.CounterVec
	durs  *prometheus.HistogramVec

	once sync.Once
	call prometheus.Counter  // set by once
	dur  prometheus.Observer // set by once
}

// observeSpan counts a call of the command that began at start and
// ended at end.
func (m *cmdMetric) observeSpan(start, end time.Time) {
	m.once.Do(func() {
		m.call, m.dur = m.calls.WithLabelValues(m.name), m.durs.WithLabelValues(m.name)
	})
	m.call.Inc()
	m.dur.Observe(end.Sub(start).Seconds())
}

// latencyBuckets span 50 µs to about 6.5 s: an in-memory read to a write
// that waits out a slow fsync on a loaded machine.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 18)

// latencyHistogram is a histogram of durations over latencyBuckets.
func latencyHistogram(name, help string) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets})
}

func newNodeMetrics() *nodeMetrics {
	m := &nodeMetrics{
		reg: prometheus.NewRegistry(),
		commit: latencyHistogram("bloomkv_raft_commit_seconds",
			"Time from handing a write entry to raft until it is committed and applied on this node (leader only)."),
		writeWait: latencyHistogram("bloomkv_write_wait_seconds",
			"Time from reading a write command until the raft entry that carries it is handed to raft: mostly the wait for the entry before it to commit."),
		writeReply: latencyHistogram("bloomkv_write_reply_seconds",
			"Time from a write entry's result (or failure) until the reply of each write in it is ready to be written to its connection."),
		apply: latencyHistogram("bloomkv_fsm_apply_seconds",
			"Time the state machine took to apply one batch of committed entries."),
		readRound: latencyHistogram("bloomkv_read_round_seconds",
			"Time of one ReadIndex round (commit index noted, leadership confirmed by a quorum)."),
		cmds: make(map[string]*cmdMetric, len(commands)+1),
	}
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bloomkv_commands_total",
		Help: "Commands received, by name (unknown names count as \"unknown\").",
	}, []string{"command"})
	durs := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "bloomkv_command_duration_seconds",
		Help:    "Time from reading a command to writing its reply, by name; a write's includes its commit.",
		Buckets: latencyBuckets,
	}, []string{"command"})
	m.cmdList = make([]*cmdMetric, len(commands))
	for name, c := range commands {
		m.cmds[name] = &cmdMetric{name: name, calls: calls, durs: durs}
		m.cmdList[c.idx] = m.cmds[name]
	}
	m.unknown = &cmdMetric{name: "unknown", calls: calls, durs: durs}
	m.reg.MustRegister(m.commit, m.writeWait, m.writeReply, m.apply, m.readRound, calls, durs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *nodeMetrics) groupSubmitted(cmds, bytes int) {
	m.groups.Add(1)
	m.groupCmds.Add(uint64(cmds))
	m.groupBytes.Add(uint64(bytes))
}

func (m *nodeMetrics) groupDone(d time.Duration, err error) {
	if err != nil {
		m.groupErrs.Add(1)
		return
	}
	m.commit.Observe(d.Seconds())
}

func (m *nodeMetrics) readRoundDone(d time.Duration) {
	m.readRounds.Add(1)
	m.readRound.Observe(d.Seconds())
}

// timedFSM is the state machine raft is given: the node's fsm.FSM with
// each ApplyBatch timed.
type timedFSM struct {
	*fsm.FSM
	apply prometheus.Observer
}

func (f timedFSM) ApplyBatch(logs []*raft.Log) []any {
	start := time.Now()
	out := f.FSM.ApplyBatch(logs)
	f.apply.Observe(time.Since(start).Seconds())
	return out
}

func (f timedFSM) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// nodeCollector reads, at each scrape, what other parts own: raft's state
// and indexes, the state machine's counters, both bloomkv databases'
// Metrics, and the batcher's counters.
type nodeCollector struct{ n *Node }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descRaftState   = desc("bloomkv_raft_state", "1 for the raft state this node is in, 0 for the others.", "state")
	descTerm        = desc("bloomkv_raft_term", "The node's current raft term.")
	descLastIndex   = desc("bloomkv_raft_last_log_index", "Index of the last entry in the node's raft log.")
	descCommitIndex = desc("bloomkv_raft_commit_index", "Index of the last entry the node knows committed.")
	descRaftApplied = desc("bloomkv_raft_applied_index", "Index of the last entry raft has applied (its no-ops and barriers included).")
	descApplyLag    = desc("bloomkv_raft_apply_lag_entries", "Committed entries not yet applied on this node (commit index less applied index).")
	descVoters      = desc("bloomkv_raft_voters", "Voters in the latest raft configuration.")
	descLeader      = desc("bloomkv_raft_leader_known", "1 if this node knows a leader.")
	descEntries     = desc("bloomkv_raft_entries_proposed_total", "Write entries this node handed to raft as leader (one per group of writes).")
	descEntryCmds   = desc("bloomkv_raft_entry_commands_total", "Client writes in those entries.")
	descEntryBytes  = desc("bloomkv_raft_entry_bytes_total", "Bytes of those entries.")
	descEntryErrs   = desc("bloomkv_raft_entry_errors_total", "Write entries that failed (leadership lost, shutdown, timeout).")
	descReadRounds  = desc("bloomkv_read_rounds_total", "ReadIndex rounds run for linearizable reads.")
	descSoleReads   = desc("bloomkv_read_sole_voter_checks_total", "Linearizable read checks a leader that is the only voter made without a round.")
	descFSMApplied  = desc("bloomkv_fsm_applied_index", "Index of the last entry the state machine applied.")
	descSnapshots   = desc("bloomkv_snapshots_total", "Snapshots of the state machine taken.")
	descRestores    = desc("bloomkv_snapshot_restores_total", "Snapshots restored into the state machine (state replaced).")
	descRestSkipped = desc("bloomkv_snapshot_restores_skipped_total", "Snapshot restores skipped: the state was already as new.")
	descCachedF     = desc("bloomkv_filter_cache_filters", "Decoded Bloom and cuckoo filters held in memory.")
	descCachedB     = desc("bloomkv_filter_cache_bytes", "Bytes of the decoded filters held in memory.")
	descCachedS     = desc("bloomkv_string_cache_strings", "String values held in memory for GET.")
	descCachedSB    = desc("bloomkv_string_cache_bytes", "Bytes of those strings, with their keys and a per-entry overhead.")
	descClients     = desc("bloomkv_clients", "Open client connections.")
	descOffloads    = desc("bloomkv_loop_offloads_total", "Commands the event loop ran on a goroutine because they wait (a read round, earlier writes, a slow command).")
	descDetaches    = desc("bloomkv_loop_detaches_total", "Connections the event loop handed to a goroutine of their own (past 16 MiB unrun, or owing replies at the end of their stream).")
	descPauses      = desc("bloomkv_loop_pauses_total", "Times a connection's commands stopped because 8 MiB of its replies waited unread.")

	// The engine's Metrics, for the state database (db="state") and the
	// raft log's (db="raftlog").
	engineCounters = []struct {
		d   *prometheus.Desc
		get func(*bloomkv.Metrics) float64
	}{
		{desc("bloomkv_db_gets_total", "Get calls.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.Gets) }},
		{desc("bloomkv_db_tables_probed_total", "Tables whose key range covered a Get's key.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.TablesProbed) }},
		{desc("bloomkv_db_filter_negatives_total", "Probed tables skipped because their filter said absent.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.FilterNegatives) }},
		{desc("bloomkv_db_filter_false_positives_total", "Probed tables whose filter said maybe and that did not hold the key.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.FilterFalsePositives) }},
		{desc("bloomkv_db_data_block_reads_total", "Data blocks read for Gets, from the cache or a file.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.DataBlockReads) }},
		{desc("bloomkv_db_block_cache_hits_total", "Data blocks for Gets found in the block cache.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.BlockCacheHits) }},
		{desc("bloomkv_db_block_cache_misses_total", "Data blocks for Gets read from a file.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.BlockCacheMisses) }},
		{desc("bloomkv_db_memtable_hits_total", "Gets answered by a memtable.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.MemtableHits) }},
		{desc("bloomkv_db_iter_data_block_reads_total", "Data blocks read by iterators.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.IterDataBlockReads) }},
		{desc("bloomkv_db_flushes_total", "Memtable flushes.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.Flushes) }},
		{desc("bloomkv_db_compactions_total", "Compactions.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.Compactions) }},
		{desc("bloomkv_db_write_stalls_total", "Writes that waited for flushes or compactions.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.WriteStalls) }},
		{desc("bloomkv_db_write_stall_seconds_total", "Time writes spent stalled.", "db"), func(m *bloomkv.Metrics) float64 { return m.WriteStallTime.Seconds() }},
		{desc("bloomkv_db_wal_syncs_total", "Write-ahead log syncs.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.WALSyncs) }},
		{desc("bloomkv_db_user_bytes_written_total", "Bytes of keys and values written.", "db"), func(m *bloomkv.Metrics) float64 { return float64(m.UserBytesWritten) }},
	}
)

func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRaftState, descTerm, descLastIndex, descCommitIndex, descRaftApplied,
		descApplyLag, descVoters, descLeader, descEntries, descEntryCmds, descEntryBytes, descEntryErrs, descReadRounds, descSoleReads,
		descFSMApplied, descSnapshots, descRestores, descRestSkipped, descCachedF, descCachedB, descCachedS, descCachedSB, descClients,
		descOffloads, descDetaches, descPauses} {
		ch <- d
	}
	for _, e := range engineCounters {
		ch <- e.d
	}
}

func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	state := n.raft.State()
	for _, s := range []raft.RaftState{raft.Follower, raft.Candidate, raft.Leader, raft.Shutdown} {
		v := 0.0
		if s == state {
			v = 1
		}
		gauge(descRaftState, v, strings.ToLower(s.String()))
	}
	gauge(descTerm, float64(n.raft.CurrentTerm()))
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		voters := 0
		for _, s := range f.Configuration().Servers {
			if s.Suffrage == raft.Voter {
				voters++
			}
		}
		gauge(descVoters, float64(voters))
	}
	commit, applied := n.raft.CommitIndex(), n.raft.AppliedIndex()
	gauge(descLastIndex, float64(n.raft.LastIndex()))
	gauge(descCommitIndex, float64(commit))
	gauge(descRaftApplied, float64(applied))
	lag := 0.0
	if commit > applied {
		lag = float64(commit - applied)
	}
	gauge(descApplyLag, lag)
	leader := 0.0
	if _, id := n.raft.LeaderWithID(); id != "" {
		leader = 1
	}
	gauge(descLeader, leader)

	m := n.metrics
	counter(descEntries, float64(m.groups.Load()))
	counter(descEntryCmds, float64(m.groupCmds.Load()))
	counter(descEntryBytes, float64(m.groupBytes.Load()))
	counter(descEntryErrs, float64(m.groupErrs.Load()))
	counter(descReadRounds, float64(m.readRounds.Load()))
	counter(descSoleReads, float64(m.soleVoterReads.Load()))
	gauge(descClients, float64(n.clients.Load()))
	offloads, detaches, pauses := n.loop.counts()
	counter(descOffloads, float64(offloads))
	counter(descDetaches, float64(detaches))
	counter(descPauses, float64(pauses))

	fm := n.fsm.Metrics()
	gauge(descFSMApplied, float64(fm.Applied))
	counter(descSnapshots, float64(fm.Snapshots))
	counter(descRestores, float64(fm.Restores))
	counter(descRestSkipped, float64(fm.RestoresSkipped))
	gauge(descCachedF, float64(fm.CachedFilters))
	gauge(descCachedB, float64(fm.CachedBytes))
	gauge(descCachedS, float64(fm.CachedStrings))
	gauge(descCachedSB, float64(fm.CachedStrBytes))

	engine := func(db string, em bloomkv.Metrics) {
		for _, e := range engineCounters {
			counter(e.d, e.get(&em), db)
		}
	}
	if em, err := n.fsm.DBMetrics(); err == nil { // fails only once closed
		engine("state", em)
	}
	engine("raftlog", n.logs.DB().Metrics())
}

// serveMetrics serves the registry in Prometheus's text format on
// cfg.MetricsAddr at /metrics (and /, for a quick curl).
func (n *Node) serveMetrics() error {
	n.metrics.reg.MustRegister(nodeCollector{n})
	ln, err := net.Listen("tcp", n.cfg.MetricsAddr)
	if err != nil {
		return err
	}
	h := promhttp.HandlerFor(n.metrics.reg, promhttp.HandlerOpts{})
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	mux.Handle("/{$}", h)
	n.metricsLn = ln
	n.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := n.metricsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.cfg.Logger.Warn("bloomkv/server: metrics server", "err", err)
		}
	}()
	return nil
}

// MetricsAddr returns the address the metrics endpoint listens on, or ""
// without Config.MetricsAddr.
func (n *Node) MetricsAddr() string {
	if n.metricsLn == nil {
		return ""
	}
	return n.metricsLn.Addr().String()
}
