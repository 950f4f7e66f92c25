package server

import (
	"fmt"

	"github.com/hashicorp/go-hclog"
)

// electionMsg is the warning hashicorp/raft logs when a follower hears
// from no leader within its heartbeat timeout and becomes a candidate
// (raft.go, runFollower; raft v1.7.2).
const electionMsg = "heartbeat timeout reached, starting election"

// raftLogger is the hclog.Logger raft gets. It passes everything through
// but one case: raft's electionMsg when the node has known no leader since
// it started (raft logs an empty last-leader-id then). That is how every
// node, and a lone node always, begins its first election: a normal start,
// so it is logged at INFO (issue 30). The same message after a leader was
// known stays a WARN: a leader was lost.
//
// raft has no way for a lone node to take leadership without waiting out
// one heartbeat timeout as a follower (its StartAsLeader is for tests and
// risks two leaders), so the message itself cannot be avoided; only its
// level.
type raftLogger struct {
	hclog.Logger
}

func newRaftLogger(l hclog.Logger) hclog.Logger { return raftLogger{l} }

// firstElection reports whether msg and args are raft's electionMsg with
// no last leader.
func firstElection(msg string, args []any) bool {
	if msg != electionMsg {
		return false
	}
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "last-leader-id" {
			return fmt.Sprint(args[i+1]) == "" // a raft.ServerID
		}
	}
	return false
}

func (l raftLogger) Warn(msg string, args ...any) {
	if firstElection(msg, args) {
		l.Logger.Info(msg, args...)
		return
	}
	l.Logger.Warn(msg, args...)
}

func (l raftLogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Warn && firstElection(msg, args) {
		level = hclog.Info
	}
	l.Logger.Log(level, msg, args...)
}

func (l raftLogger) With(args ...any) hclog.Logger { return raftLogger{l.Logger.With(args...)} }

func (l raftLogger) Named(name string) hclog.Logger { return raftLogger{l.Logger.Named(name)} }

func (l raftLogger) ResetNamed(name string) hclog.Logger {
	return raftLogger{l.Logger.ResetNamed(name)}
}
