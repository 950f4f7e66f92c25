package server

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// syncBuffer is a bytes.Buffer that raft's goroutines may write to while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFirstElectionLogsInfo: a clean one-node start, and a restart, log
// raft's "starting election" at INFO, not WARN (issue 30); at the default
// level "warn", raft logs nothing at all on a clean start.
func TestFirstElectionLogsInfo(t *testing.T) {
	for _, level := range []string{"info", "warn"} {
		t.Run(level, func(t *testing.T) {
			var out syncBuffer
			cfg := testConfig(t, "n1")
			cfg.LogOutput, cfg.LogLevel = &out, level
			addrs := freeAddrs(t, 2)
			cfg.RaftAddr, cfg.Addr = addrs[0], addrs[1]
			for start := range 2 { // a new node, then the same node restarted
				n := startNode(t, cfg)
				waitFor(t, "leadership", 10*time.Second, n.IsLeader)
				if err := n.Close(); err != nil {
					t.Fatal(err)
				}
				log := out.String()
				if strings.Contains(log, "[WARN]") || strings.Contains(log, "[ERROR]") {
					t.Fatalf("start %d logged a warning:\n%s", start, log)
				}
				if want := "[INFO]  raft: " + electionMsg; level == "info" && !strings.Contains(log, want) {
					t.Fatalf("start %d: no %q in\n%s", start, want, log)
				}
				if level == "warn" && log != "" {
					t.Fatalf("start %d logged at level warn:\n%s", start, log)
				}
			}
		})
	}
}

// TestRaftLoggerLevels: only the election that follows no known leader is
// demoted; losing a known leader stays a warning, and loggers derived with
// Named and With keep the rule.
func TestRaftLoggerLevels(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  func(l hclog.Logger)
		want string // the level written, "" for nothing
	}{
		{"first election", func(l hclog.Logger) {
			l.Warn(electionMsg, "last-leader-addr", "", "last-leader-id", "")
		}, "[INFO]"},
		{"first election, raft.ServerID", func(l hclog.Logger) {
			type serverID string // raft passes its own string type
			l.Warn(electionMsg, "last-leader-addr", "", "last-leader-id", serverID(""))
		}, "[INFO]"},
		{"leader lost", func(l hclog.Logger) {
			l.Warn(electionMsg, "last-leader-addr", "127.0.0.1:1", "last-leader-id", "n2")
		}, "[WARN]"},
		{"other warning", func(l hclog.Logger) { l.Warn("failed to contact", "server-id", "") }, "[WARN]"},
		{"through Log", func(l hclog.Logger) {
			l.Log(hclog.Warn, electionMsg, "last-leader-id", "")
		}, "[INFO]"},
		{"Named", func(l hclog.Logger) {
			l.Named("x").Warn(electionMsg, "last-leader-id", "")
		}, "[INFO]"},
		{"With", func(l hclog.Logger) {
			l.With("a", 1).Warn(electionMsg, "last-leader-id", "")
		}, "[INFO]"},
	} {
		var out bytes.Buffer
		l := newRaftLogger(hclog.New(&hclog.LoggerOptions{Name: "raft", Output: &out, Level: hclog.Info}))
		tc.log(l)
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: logged %q, want %s", tc.name, out.String(), tc.want)
		}
	}
}

// TestCommandDocsCoverTable: every command of the table has its COMMAND
// entry, and no entry names a command the table lacks.
func TestCommandDocsCoverTable(t *testing.T) {
	for name := range commands {
		if d, ok := cmdDocs[name]; !ok || d.summary == "" || d.group == "" {
			t.Errorf("%s: no COMMAND DOCS entry", name)
		}
	}
	for name := range cmdDocs {
		if commands[name] == nil {
			t.Errorf("%s: documented, not in the command table", name)
		}
	}
}

// TestCommandReplies: COMMAND and its subcommands answer with Redis 7's
// reply shapes (RESP2).
func TestCommandReplies(t *testing.T) {
	n, c := singleNode(t)
	conn := rawConn(t, n.Addr())
	r := bufio.NewReader(conn)
	count := strconv.Itoa(len(commands))
	getInfo := "*10|$3|get|:2|*1|+readonly|:1|:1|:1|*0|*0|*0|*0"
	for _, tc := range []struct {
		req  string
		want string // the whole reply, lines joined by "|"
	}{
		{resp("COMMAND", "COUNT"), ":" + count},
		{resp("command", "count"), ":" + count},
		{resp("COMMAND", "COUNT", "x"), "-ERR wrong number of arguments for 'command|count' command"},
		{resp("COMMAND", "INFO", "get"), "*1|" + getInfo},
		{resp("COMMAND", "INFO", "GET", "nosuch", "mget"), "*3|" + getInfo + "|$-1|*10|$4|mget|:-2|*1|+readonly|:1|:-1|:1|*0|*0|*0|*0"},
		{resp("COMMAND", "INFO", "set"), "*1|*10|$3|set|:-3|*1|+write|:1|:1|:1|*0|*0|*0|*0"},
		{resp("COMMAND", "INFO", "scan"), "*1|*10|$4|scan|:-2|*1|+readonly|:0|:0|:0|*0|*0|*0|*0"},
		{resp("COMMAND", "INFO", "raft.remove"), "*1|*10|$11|raft.remove|:2|*1|+admin|:0|:0|:0|*0|*0|*0|*0"},
		{resp("COMMAND", "DOCS", "get"), "*2|$3|get|*4|$7|summary|$26|The string value of a key.|$5|group|$6|string"},
		{resp("COMMAND", "DOCS", "BF.ADD"), "*2|$6|bf.add|*6|$7|summary|$55|Adds an item to a Bloom filter, creating it if missing.|$5|group|$6|module|$6|module|$2|bf"},
		// Unknown names are left out: only unknown names, an empty array.
		{resp("COMMAND", "DOCS", "nosuch"), "*0"},
		{resp("COMMAND", "DOCS", "nosuch", "echo"), "*2|$4|echo|*4|$7|summary|$26|Answers with its argument.|$5|group|$10|connection"},
		{resp("COMMAND", "FOO"), "-ERR unknown subcommand 'FOO'. Try COMMAND HELP."},
		{resp("COMMAND", "LIST", "FILTERBY", "module", "bf"), "-ERR syntax error"},
	} {
		if _, err := conn.Write([]byte(tc.req)); err != nil {
			t.Fatal(err)
		}
		if got := readWhole(t, r); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.req, got, tc.want)
		}
	}

	// The counts agree: COMMAND, COMMAND LIST and COMMAND DOCS list every
	// command once; a Redis 7 client parses COMMAND.
	info, err := c.Command(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(info) != len(commands) || info["bf.add"] == nil || info["get"].ReadOnly != true || info["set"].ReadOnly {
		t.Fatalf("go-redis parsed COMMAND as %d commands (want %d): %v", len(info), len(commands), info["get"])
	}
	names, err := c.Do(ctx, "COMMAND", "LIST").StringSlice()
	if err != nil || len(names) != len(commands) {
		t.Fatalf("COMMAND LIST: %d names, %v", len(names), err)
	}
	docs, err := c.Do(ctx, "COMMAND", "DOCS").Slice()
	if err != nil || len(docs) != 2*len(commands) {
		t.Fatalf("COMMAND DOCS: %d elements, %v", len(docs), err)
	}
}
