package server

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/bloomkv/bloomkv/server/fsm"
)

// Commands a Redis user reaches for first (issue 29).

// cmdIncr: INCR, DECR, INCRBY, DECRBY. The read-modify-write happens in
// the state machine (fsm.OpIncr carries the increment, not the result),
// so concurrent increments on any replica add up, and each reply is the
// value that increment produced.
func cmdIncr(_ *Node, a [][]byte) (*fsm.Command, replyFunc, error) {
	delta := int64(1)
	name := strings.ToLower(string(a[0]))
	if name == "incrby" || name == "decrby" {
		d, err := parseInt(a[2])
		if err != nil {
			return nil, nil, err
		}
		delta = d
	}
	if name == "decr" || name == "decrby" {
		if delta == math.MinInt64 {
			return nil, nil, errors.New("ERR decrement would overflow")
		}
		delta = -delta
	}
	return &fsm.Command{Op: fsm.OpIncr, Key: a[1], Delta: delta}, replyN, checkKey(a[1])
}

// cmdGetDel deletes a string key and answers its value, as Redis's GETDEL:
// nil for an absent key, WRONGTYPE (and nothing deleted) for a filter.
// One replicated command, so the value answered is the one deleted.
func cmdGetDel(_ *Node, a [][]byte) (*fsm.Command, replyFunc, error) {
	return &fsm.Command{Op: fsm.OpGetDel, Key: a[1]}, replyOld, checkKey(a[1])
}

// replyOld answers the old value a command returned, or nil.
func replyOld(conn *respConn, r *fsm.Result) {
	switch {
	case r.Err != nil:
		writeErr(conn, r.Err)
	case r.OldFound:
		conn.WriteBulk(r.Old)
	default:
		conn.WriteNull()
	}
}

// cmdDBSize counts the keys of every kind: a scan of the state, which
// costs time in proportion to the keys.
func cmdDBSize(n *Node, c *respConn, _ *connState, _ [][]byte) {
	count := 0
	if err := n.fsm.Scan(nil, func([]byte, fsm.Kind) bool { count++; return true }); err != nil {
		writeErr(c, err)
		return
	}
	c.WriteInt(count)
}

// cmdKeys: KEYS pattern, every matching key in key order. As in Redis it
// walks the whole key space; SCAN is the command for large databases.
func cmdKeys(n *Node, c *respConn, _ *connState, a [][]byte) {
	var keys [][]byte
	err := n.fsm.Scan(nil, func(k []byte, _ fsm.Kind) bool {
		if globMatch(a[1], k) {
			keys = append(keys, append([]byte(nil), k...))
		}
		return true
	})
	if err != nil {
		writeErr(c, err)
		return
	}
	c.WriteArray(len(keys))
	for _, k := range keys {
		c.WriteBulk(k)
	}
}

// cmdTTL: TTL and PTTL. Keys never expire here, so the answer is the
// truth: -2 for a key that does not exist, -1 for one without an expiry.
func cmdTTL(n *Node, c *respConn, _ *connState, a [][]byte) {
	kind, _, err := n.fsm.Get(a[1])
	switch {
	case err != nil:
		writeErr(c, err)
	case kind == fsm.KindNone:
		c.WriteInt(-2)
	default:
		c.WriteInt(-1)
	}
}

// errNoExpiry refuses what would set an expiry. Expiry needs the value
// format to carry a deadline and the leader's clock in the command, so
// that every replica expires a key at the same point of the log; until
// then the refusal is clear and changes nothing.
var errNoExpiry = errors.New("ERR bloomkv: keys do not expire; EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, GETEX, SETEX, PSETEX and SET's EX, PX, EXAT, PXAT and KEEPTTL are not supported")

func cmdNoExpiry(_ *Node, c *respConn, _ *connState, _ [][]byte) { writeErr(c, errNoExpiry) }

// configValues are the parameters clients ask for on connecting
// (redis-benchmark asks for save and appendonly), with the values that
// describe this server: it persists every write before answering (as
// appendonly with appendfsync always) and keeps no RDB schedule.
var configValues = [][2]string{
	{"save", ""},
	{"appendonly", "yes"},
	{"appendfsync", "always"},
	{"databases", "1"},
	{"maxmemory", "0"},
	{"maxmemory-policy", "noeviction"},
	{"timeout", "0"},
	{"proto-max-bulk-len", ""},
	{"cluster-enabled", "no"},
}

// cmdConfig: CONFIG GET pattern [pattern ...] answers from configValues;
// CONFIG SET, REWRITE and RESETSTAT are refused (settings are flags of
// kvserver).
func cmdConfig(n *Node, c *respConn, _ *connState, a [][]byte) {
	switch strings.ToLower(string(a[1])) {
	case "get":
		if len(a) < 3 {
			c.WriteError("ERR wrong number of arguments for 'config|get' command")
			return
		}
		var out [][2]string
		for _, kv := range configValues {
			v := kv[1]
			if kv[0] == "proto-max-bulk-len" {
				v = fmt.Sprint(n.cfg.MaxBulk)
			}
			for _, pat := range a[2:] {
				if globMatch([]byte(strings.ToLower(string(pat))), []byte(kv[0])) {
					out = append(out, [2]string{kv[0], v})
					break
				}
			}
		}
		c.WriteArray(2 * len(out))
		for _, kv := range out {
			c.WriteBulkString(kv[0])
			c.WriteBulkString(kv[1])
		}
	case "set", "rewrite", "resetstat":
		c.WriteError(fmt.Sprintf("ERR bloomkv: CONFIG %s is not supported; settings are kvserver's flags", strings.ToUpper(string(a[1]))))
	default:
		c.WriteError(fmt.Sprintf("ERR unknown subcommand '%s'. Try CONFIG HELP.", clip(a[1])))
	}
}
