package server

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape fetches the metrics endpoint and returns each sample's value by
// its series ("name" or "name{labels}"), and the families by their TYPE.
func scrape(t *testing.T, addr string) (samples map[string]float64, types map[string]string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/plain") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape: %s, %q: %s", resp.Status, ct, b)
	}
	samples, types = map[string]float64{}, map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape: %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return samples, types
}

// TestMetricsEndpoint: a node with a metrics address serves Prometheus's
// text format; after a few commands the families of issue 29 are there
// with values that agree with what was done.
func TestMetricsEndpoint(t *testing.T) {
	cfg := testConfig(t, "n1")
	cfg.MetricsAddr = "127.0.0.1:0"
	n := startNode(t, cfg)
	waitFor(t, "leadership", 10*time.Second, n.IsLeader)
	if a := n.MetricsAddr(); !strings.HasPrefix(a, "127.0.0.1:") || strings.HasSuffix(a, ":0") {
		t.Fatalf("MetricsAddr() = %q", a)
	}
	c := newClient(t, n.Addr())
	for i := range 5 {
		if err := c.Set(ctx, "k"+strconv.Itoa(i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if err := c.Get(ctx, "k1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.Get(ctx, "absent")
	c.BFAdd(ctx, "seen", "alice")
	c.Do(ctx, "NOSUCH")
	if err := c.Do(ctx, "RAFT.SNAPSHOT").Err(); err != nil {
		t.Fatal(err)
	}

	s, types := scrape(t, n.MetricsAddr())
	for _, tc := range []struct {
		series string
		ok     func(v float64) bool
		want   string
	}{
		{`bloomkv_raft_state{state="leader"}`, eq(1), "1"},
		{`bloomkv_raft_state{state="follower"}`, eq(0), "0"},
		{`bloomkv_raft_term`, atLeast(1), ">= 1"},
		{`bloomkv_raft_voters`, eq(1), "1"},
		{`bloomkv_raft_leader_known`, eq(1), "1"},
		{`bloomkv_raft_commit_index`, atLeast(7), ">= 7 (5 SETs, BF.ADD, the leader's address)"},
		{`bloomkv_raft_apply_lag_entries`, eq(0), "0 (every reply came after its apply)"},
		{`bloomkv_fsm_applied_index`, atLeast(7), ">= 7"},
		{`bloomkv_raft_commit_seconds_count`, atLeast(6), ">= 6 (one per write entry)"},
		{`bloomkv_raft_commit_seconds_sum`, positive, "> 0"},
		{`bloomkv_write_wait_seconds_count`, eq(6), "6 (5 SETs and BF.ADD)"},
		{`bloomkv_write_wait_seconds_sum`, positive, "> 0"},
		{`bloomkv_write_reply_seconds_count`, eq(6), "6"},
		{`bloomkv_write_reply_seconds_sum`, positive, "> 0"},
		{`bloomkv_fsm_apply_seconds_count`, atLeast(1), ">= 1"},
		{`bloomkv_raft_entries_proposed_total`, atLeast(6), ">= 6"},
		{`bloomkv_raft_entry_commands_total`, atLeast(6), ">= 6"},
		{`bloomkv_read_rounds_total`, eq(0), "0 (the only voter needs no round)"},
		{`bloomkv_read_sole_voter_checks_total`, atLeast(1), ">= 1 (one per run of reads)"},
		{`bloomkv_read_round_seconds_count`, eq(0), "0"},
		{`bloomkv_snapshots_total`, eq(1), "1 (RAFT.SNAPSHOT)"},
		{`bloomkv_snapshot_restores_total`, eq(0), "0"},
		{`bloomkv_db_gets_total{db="state"}`, atLeast(4), ">= 4 (four GETs)"},
		{`bloomkv_db_filter_negatives_total{db="state"}`, atLeast(0), ">= 0"},
		{`bloomkv_db_filter_false_positives_total{db="state"}`, atLeast(0), ">= 0"},
		{`bloomkv_db_data_block_reads_total{db="state"}`, atLeast(0), ">= 0"},
		{`bloomkv_db_compactions_total{db="state"}`, atLeast(0), ">= 0"},
		{`bloomkv_db_write_stalls_total{db="state"}`, eq(0), "0"},
		{`bloomkv_db_wal_syncs_total{db="raftlog"}`, atLeast(1), ">= 1 (the raft log syncs every write)"},
		{`bloomkv_commands_total{command="set"}`, eq(5), "5"},
		{`bloomkv_commands_total{command="get"}`, eq(4), "4"},
		{`bloomkv_commands_total{command="bf.add"}`, eq(1), "1"},
		{`bloomkv_commands_total{command="unknown"}`, eq(1), "1"},
		{`bloomkv_command_duration_seconds_count{command="set"}`, eq(5), "5"},
		{`bloomkv_command_duration_seconds_bucket{command="get",le="+Inf"}`, eq(4), "4"},
		{`bloomkv_command_duration_seconds_sum{command="set"}`, positive, "> 0"},
		{`bloomkv_clients`, atLeast(1), ">= 1"},
		{`bloomkv_loop_offloads_total`, atLeast(1), ">= 1 (RAFT.SNAPSHOT runs on a goroutine)"},
		{`bloomkv_loop_detaches_total`, eq(0), "0"},
		{`bloomkv_loop_pauses_total`, eq(0), "0"},
		{`bloomkv_string_cache_strings`, eq(6), "6 (the five SETs, written through, and the key a GET found absent)"},
	} {
		v, ok := s[tc.series]
		if !ok {
			t.Errorf("%s: missing", tc.series)
			continue
		}
		if !tc.ok(v) {
			t.Errorf("%s = %v, want %s", tc.series, v, tc.want)
		}
	}
	for name, typ := range map[string]string{
		"bloomkv_raft_state": "gauge", "bloomkv_raft_commit_seconds": "histogram", "bloomkv_fsm_apply_seconds": "histogram",
		"bloomkv_write_wait_seconds": "histogram", "bloomkv_write_reply_seconds": "histogram",
		"bloomkv_db_gets_total": "counter", "bloomkv_commands_total": "counter", "bloomkv_command_duration_seconds": "histogram",
		"go_goroutines": "gauge",
	} {
		if types[name] != typ {
			t.Errorf("family %s: type %q, want %s", name, types[name], typ)
		}
	}
	// Commands not yet called have no series: the page stays short.
	if _, ok := s[`bloomkv_commands_total{command="cf.del"}`]; ok {
		t.Error("an unused command has a series")
	}
	checkWriteStages(t, s, "set", "bf.add")
}

// checkWriteStages checks that the stages of a write add up to its
// duration. A client that waits for each reply sends each write in a raft
// entry of its own; the write's duration (read to reply written) is then
// its wait (read to its entry handed to raft), its entry's commit (handed
// to raft to its result) and its reply's delay (result to reply written),
// all from the same clock readings: the durations of the writes must sum
// to the waits, the commits and the replies. Every entry must be one of
// these writes'.
func checkWriteStages(t *testing.T, s map[string]float64, writes ...string) {
	t.Helper()
	var dur, n float64
	for _, w := range writes {
		dur += s[`bloomkv_command_duration_seconds_sum{command="`+w+`"}`]
		n += s[`bloomkv_command_duration_seconds_count{command="`+w+`"}`]
	}
	if entries := s[`bloomkv_raft_commit_seconds_count`]; entries != n {
		t.Fatalf("%v write entries for %v writes", entries, n)
	}
	for _, stage := range []string{"wait", "reply"} {
		if c := s[`bloomkv_write_`+stage+`_seconds_count`]; c != n {
			t.Errorf("bloomkv_write_%s_seconds_count = %v, want %v", stage, c, n)
		}
	}
	wait, reply := s[`bloomkv_write_wait_seconds_sum`], s[`bloomkv_write_reply_seconds_sum`]
	commit := s[`bloomkv_raft_commit_seconds_sum`]
	const slack = 1e-6 // sums of the same readings, in floating point
	if sum := wait + commit + reply; math.Abs(dur-sum) > slack {
		t.Errorf("the writes took %v s; their waits %v + commits %v + replies %v = %v", dur, wait, commit, reply, sum)
	}
}

// TestMetricsCluster: every node of a three-node cluster serves the
// families of issue 29, and what each shows agrees with its role: the
// leader proposed and committed the writes and ran read rounds, the
// followers stored, fsynced and applied the same entries (their applied
// index advanced to the leader's), and each counts the commands its own
// clients sent.
func TestMetricsCluster(t *testing.T) {
	cl := newCluster(t, 3, func(c *Config) { c.MetricsAddr = "127.0.0.1:0" })
	li, leader := cl.leader()
	c := newClient(t, leader.Addr())
	const writes = 20
	for i := range writes {
		if err := c.Set(ctx, "k"+strconv.Itoa(i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if err := c.Get(ctx, "k1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Do(ctx, "RAFT.SNAPSHOT").Err(); err != nil {
		t.Fatal(err)
	}
	for i, n := range cl.nodes {
		if i == li {
			continue
		}
		waitCaughtUp(t, n, leader)
		// One stale read per follower, counted there.
		if v, err := staleClient(t, n.Addr()).Get(ctx, "k1").Result(); v != "v" || err != nil {
			t.Fatalf("%s: GET k1 = %q, %v", n.ID(), v, err)
		}
	}
	leaderApplied := leader.FSM().Applied()
	if leaderApplied < writes {
		t.Fatalf("leader applied index %d after %d writes", leaderApplied, writes)
	}

	type check struct {
		series string
		ok     func(v float64) bool
		want   string
	}
	both := []check{
		{`bloomkv_raft_voters`, eq(3), "3"},
		{`bloomkv_raft_leader_known`, eq(1), "1"},
		{`bloomkv_raft_term`, atLeast(1), ">= 1"},
		{`bloomkv_raft_last_log_index`, atLeast(float64(leaderApplied)), fmt.Sprintf(">= %d (the leader's applied index)", leaderApplied)},
		{`bloomkv_raft_commit_index`, atLeast(float64(leaderApplied)), fmt.Sprintf(">= %d", leaderApplied)},
		{`bloomkv_raft_applied_index`, atLeast(float64(leaderApplied)), fmt.Sprintf(">= %d", leaderApplied)},
		{`bloomkv_fsm_applied_index`, atLeast(float64(leaderApplied)), fmt.Sprintf(">= %d (caught up)", leaderApplied)},
		{`bloomkv_raft_apply_lag_entries`, atLeast(0), ">= 0"},
		{`bloomkv_fsm_apply_seconds_count`, atLeast(1), ">= 1"},
		{`bloomkv_fsm_apply_seconds_sum`, positive, "> 0"},
		{`bloomkv_snapshot_restores_total`, eq(0), "0"},
		{`bloomkv_snapshot_restores_skipped_total`, eq(0), "0"},
		{`bloomkv_db_wal_syncs_total{db="raftlog"}`, atLeast(1), ">= 1 (every node fsyncs its raft log)"},
		{`bloomkv_db_user_bytes_written_total{db="state"}`, atLeast(writes), fmt.Sprintf(">= %d (the writes applied)", writes)},
		{`bloomkv_db_gets_total{db="state"}`, atLeast(1), ">= 1"},
		{`bloomkv_db_write_stalls_total{db="state"}`, eq(0), "0"},
		{`bloomkv_db_compactions_total{db="state"}`, atLeast(0), ">= 0"},
		{`bloomkv_read_sole_voter_checks_total`, eq(0), "0 (three voters)"},
		{`bloomkv_string_cache_strings`, eq(writes), fmt.Sprintf("%d (every SET, written through on every node)", writes)},
		{`bloomkv_command_duration_seconds_bucket{command="get",le="+Inf"}`, atLeast(1), ">= 1"},
		{`bloomkv_clients`, atLeast(1), ">= 1"},
	}
	onLeader := []check{
		{`bloomkv_raft_state{state="leader"}`, eq(1), "1"},
		{`bloomkv_raft_state{state="follower"}`, eq(0), "0"},
		{`bloomkv_raft_entries_proposed_total`, atLeast(1), ">= 1"},
		{`bloomkv_raft_entry_commands_total`, eq(writes), fmt.Sprint(writes)},
		{`bloomkv_raft_commit_seconds_count`, atLeast(1), ">= 1"},
		{`bloomkv_read_rounds_total`, atLeast(1), ">= 1 (three voters: reads confirm leadership)"},
		{`bloomkv_snapshots_total`, eq(1), "1 (RAFT.SNAPSHOT)"},
		{`bloomkv_commands_total{command="set"}`, eq(writes), fmt.Sprint(writes)},
		{`bloomkv_commands_total{command="get"}`, eq(3), "3"},
		{`bloomkv_command_duration_seconds_count{command="set"}`, eq(writes), fmt.Sprint(writes)},
	}
	onFollower := []check{
		{`bloomkv_raft_state{state="leader"}`, eq(0), "0"},
		{`bloomkv_raft_state{state="follower"}`, eq(1), "1"},
		{`bloomkv_raft_entries_proposed_total`, eq(0), "0"},
		{`bloomkv_raft_commit_seconds_count`, eq(0), "0 (leader only)"},
		{`bloomkv_read_rounds_total`, eq(0), "0 (stale reads)"},
		{`bloomkv_snapshots_total`, eq(0), "0"},
		{`bloomkv_commands_total{command="get"}`, eq(1), "1 (its stale read)"},
		{`bloomkv_commands_total{command="readonly"}`, eq(1), "1"},
	}
	for i, n := range cl.nodes {
		s, types := scrape(t, n.MetricsAddr())
		checks := slices.Concat(both, onFollower)
		if i == li {
			checks = slices.Concat(both, onLeader)
		}
		for _, tc := range checks {
			v, ok := s[tc.series]
			if !ok {
				t.Errorf("%s: %s: missing", n.ID(), tc.series)
				continue
			}
			if !tc.ok(v) {
				t.Errorf("%s: %s = %v, want %s", n.ID(), tc.series, v, tc.want)
			}
		}
		if i != li {
			if _, ok := s[`bloomkv_commands_total{command="set"}`]; ok {
				t.Errorf("%s: a follower counts SETs no client sent it", n.ID())
			}
		}
		for name, typ := range map[string]string{"bloomkv_raft_commit_seconds": "histogram", "bloomkv_fsm_apply_seconds": "histogram", "bloomkv_db_gets_total": "counter"} {
			if types[name] != typ {
				t.Errorf("%s: family %s: type %q, want %s", n.ID(), name, types[name], typ)
			}
		}
	}
}

// TestNoMetricsAddr: without a metrics address nothing listens. The node
// is closed at once, before its RESP server may have begun to serve (that
// Close used to wait forever).
func TestNoMetricsAddr(t *testing.T) {
	for range 20 {
		n, err := Start(testConfig(t, "n1"))
		if err != nil {
			t.Fatal(err)
		}
		if a := n.MetricsAddr(); a != "" {
			t.Fatalf("MetricsAddr() = %q without Config.MetricsAddr", a)
		}
		done := make(chan error, 1)
		go func() { done <- n.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Close right after Start did not return")
		}
	}
}

func eq(want float64) func(float64) bool { return func(v float64) bool { return v == want } }

func atLeast(min float64) func(float64) bool { return func(v float64) bool { return v >= min } }

func positive(v float64) bool { return v > 0 }

// TestCommandDurationExcludesIdle: a command's duration runs from reading
// it to writing its reply, not from the reply before it: a client that
// waits between commands does not make them look slow. On the event loop
// each command after an idle spell counted the spell (found measuring
// issue 29's write stages: six writes of a serial client summed to
// milliseconds of wait). Each spell follows another kind of command: a
// write (the connection parked until it is answered), a read run on the
// loop, and DBSIZE, which the loop hands to a goroutine.
func TestCommandDurationExcludesIdle(t *testing.T) {
	const idle = 150 * time.Millisecond
	for _, goroutines := range []bool{false, true} {
		cfg := testConfig(t, "n1")
		cfg.MetricsAddr = "127.0.0.1:0"
		cfg.ConnGoroutines = goroutines
		n := startNode(t, cfg)
		waitFor(t, "leadership", 10*time.Second, n.IsLeader)
		c := newClient(t, n.Addr())
		for i := range 3 {
			time.Sleep(idle)
			if err := c.Set(ctx, "k", strconv.Itoa(i), 0).Err(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(idle)
			if err := c.Get(ctx, "k").Err(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(idle)
			if err := c.DBSize(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		s, _ := scrape(t, n.MetricsAddr())
		for _, cmd := range []string{"set", "get", "dbsize"} {
			count := s[`bloomkv_command_duration_seconds_count{command="`+cmd+`"}`]
			sum := s[`bloomkv_command_duration_seconds_sum{command="`+cmd+`"}`]
			if count != 3 || sum <= 0 || sum >= idle.Seconds() {
				t.Errorf("goroutines %v: %s: %v calls taking %v s in all; want 3 taking less than one idle spell (%v)", goroutines, cmd, count, sum, idle)
			}
		}
		wait := s[`bloomkv_write_wait_seconds_sum`]
		if wait <= 0 || wait >= idle.Seconds() {
			t.Errorf("goroutines %v: writes waited %v s in all before raft; want less than one idle spell (%v)", goroutines, wait, idle)
		}
		checkWriteStages(t, s, "set")
	}
}
