package server

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/bloomkv/bloomkv/server/fsm"
	"github.com/hashicorp/raft"
)

// Connection and server commands.

func cmdPing(_ *Node, c *respConn, _ *connState, a [][]byte) {
	switch len(a) {
	case 1:
		c.WriteString("PONG")
	case 2:
		c.WriteBulk(a[1])
	default:
		c.WriteError("ERR wrong number of arguments for 'ping' command")
	}
}

// cmdHello answers HELLO [protover ...]: this server speaks RESP2 only, so
// it refuses 3 (clients then fall back to RESP2) and describes itself for 2.
func cmdHello(n *Node, c *respConn, _ *connState, a [][]byte) {
	if len(a) > 1 {
		v, err := parseInt(a[1])
		if err != nil {
			c.WriteError("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 {
			c.WriteError("NOPROTO sorry, this protocol version is not supported")
			return
		}
	}
	role := "replica"
	if n.raft.State() == raft.Leader {
		role = "master"
	}
	c.WriteArray(14)
	c.WriteBulkString("server")
	c.WriteBulkString("bloomkv")
	c.WriteBulkString("version")
	c.WriteBulkString(Version)
	c.WriteBulkString("proto")
	c.WriteInt(2)
	c.WriteBulkString("id")
	c.WriteInt(0)
	c.WriteBulkString("mode")
	c.WriteBulkString("cluster")
	c.WriteBulkString("role")
	c.WriteBulkString(role)
	c.WriteBulkString("modules")
	c.WriteArray(0)
}

func cmdClient(_ *Node, c *respConn, _ *connState, a [][]byte) {
	switch strings.ToLower(string(a[1])) {
	case "setinfo", "setname":
		c.WriteString("OK")
	case "getname":
		c.WriteNull()
	case "id":
		c.WriteInt(0)
	default:
		c.WriteError(fmt.Sprintf("ERR unknown subcommand '%s'", clip(a[1])))
	}
}

func cmdSelect(_ *Node, c *respConn, _ *connState, a [][]byte) {
	db, err := parseInt(a[1])
	switch {
	case err != nil:
		writeErr(c, err)
	case db != 0:
		c.WriteError("ERR DB index is out of range")
	default:
		c.WriteString("OK")
	}
}

// Strings.

func cmdGet(n *Node, c *respConn, _ *connState, a [][]byte) {
	kind, v, err := n.fsm.Get(a[1])
	switch {
	case err != nil:
		writeErr(c, err)
	case kind == fsm.KindNone:
		c.WriteNull()
	case kind != fsm.KindString:
		writeErr(c, fsm.ErrWrongType)
	default:
		c.WriteBulk(v)
	}
}

func cmdMGet(n *Node, c *respConn, _ *connState, a [][]byte) {
	vals := make([][]byte, len(a)-1)
	for i, k := range a[1:] {
		kind, v, err := n.fsm.Get(k)
		if err != nil {
			writeErr(c, err)
			return
		}
		if kind == fsm.KindString {
			vals[i] = v
		}
	}
	c.WriteArray(len(vals))
	for _, v := range vals {
		if v == nil {
			c.WriteNull()
		} else {
			c.WriteBulk(v)
		}
	}
}

func cmdExists(n *Node, c *respConn, _ *connState, a [][]byte) {
	count := 0
	for _, k := range a[1:] {
		kind, _, err := n.fsm.Get(k)
		if err != nil {
			writeErr(c, err)
			return
		}
		if kind != fsm.KindNone {
			count++
		}
	}
	c.WriteInt(count)
}

func cmdType(n *Node, c *respConn, _ *connState, a [][]byte) {
	kind, _, err := n.fsm.Get(a[1])
	if err != nil {
		writeErr(c, err)
		return
	}
	c.WriteString(kind.TypeName())
}

// cmdSet: SET key value [NX|XX] [GET]. Expiry options are refused: the
// state machine has no clock.
func cmdSet(_ *Node, a [][]byte) (*fsm.Command, replyFunc, error) {
	c := &fsm.Command{Op: fsm.OpPut, Key: a[1], Value: a[2]}
	for _, opt := range a[3:] {
		switch strings.ToLower(string(opt)) {
		case "nx":
			c.Flags |= fsm.PutNX
		case "xx":
			c.Flags |= fsm.PutXX
		case "get":
			c.Flags |= fsm.PutGet
		case "ex", "px", "exat", "pxat", "keepttl":
			return nil, nil, errNoExpiry
		default:
			return nil, nil, errSyntax
		}
	}
	if c.Flags&fsm.PutNX != 0 && c.Flags&fsm.PutXX != 0 {
		return nil, nil, errSyntax
	}
	if err := checkKey(a[1]); err != nil {
		return nil, nil, err
	}
	if c.Flags == 0 {
		return c, replySet, nil // no closure to allocate for a plain SET
	}
	get := c.Flags&fsm.PutGet != 0
	return c, func(conn *respConn, r *fsm.Result) {
		switch {
		case r.Err != nil:
			writeErr(conn, r.Err)
		case get && r.OldFound:
			conn.WriteBulk(r.Old)
		case get || r.N == 0:
			conn.WriteNull()
		default:
			conn.WriteString("OK")
		}
	}, nil
}

// replySet answers a SET without options.
func replySet(conn *respConn, r *fsm.Result) {
	switch {
	case r.Err != nil:
		writeErr(conn, r.Err)
	case r.N == 0:
		conn.WriteNull()
	default:
		conn.WriteString("OK")
	}
}

func checkKey(k []byte) error {
	if len(k) > fsm.MaxKeySize {
		return fmt.Errorf("ERR bloomkv: key of %d bytes is longer than %d", len(k), fsm.MaxKeySize)
	}
	if len(k) == 0 {
		return errors.New("ERR bloomkv: empty keys are not supported")
	}
	return nil
}

// cmdDel: DEL key [key ...]. An empty key is never stored (SET refuses
// it), so it is simply not there: DEL "" answers 0, as Redis does for a
// key that does not exist.
func cmdDel(_ *Node, a [][]byte) (*fsm.Command, replyFunc, error) {
	if len(a) == 2 && len(a[1]) > 0 {
		return &fsm.Command{Op: fsm.OpDelete, Key: a[1]}, replyN, checkKey(a[1])
	}
	c := &fsm.Command{Op: fsm.OpBatch} // possibly of no op: it still answers in log order
	seen := make(map[string]bool)
	for _, k := range a[1:] {
		if len(k) == 0 {
			continue
		}
		if err := checkKey(k); err != nil {
			return nil, nil, err
		}
		if !seen[string(k)] { // DEL k k deletes (and counts) k once
			seen[string(k)] = true
			c.Ops = append(c.Ops, fsm.Command{Op: fsm.OpDelete, Key: k})
		}
	}
	return c, replyN, nil
}

// cmdFlushAll deletes every key: a DeleteRange over the whole key space.
func cmdFlushAll(_ *Node, a [][]byte) (*fsm.Command, replyFunc, error) {
	for _, opt := range a[1:] {
		if o := strings.ToLower(string(opt)); o != "sync" && o != "async" {
			return nil, nil, errSyntax
		}
	}
	return &fsm.Command{Op: fsm.OpDeleteRange}, replyOK, nil
}

// cmdScan: SCAN cursor [MATCH pattern] [COUNT count] [TYPE type].
//
// Keys come in key order. A cursor names the last key a call examined, in
// a table on this node (cursorTable): it works on this node only, for 10
// minutes. Every key present for the whole iteration is returned exactly
// once; keys added or deleted meanwhile may or may not be.
func cmdScan(n *Node, c *respConn, _ *connState, a [][]byte) {
	cursor, err := parseUint(a[1])
	if err != nil {
		c.WriteError("ERR invalid cursor")
		return
	}
	count := int64(10)
	var match []byte
	typ := ""
	for i := 2; i < len(a); i += 2 {
		if i+1 >= len(a) {
			writeErr(c, errSyntax)
			return
		}
		switch strings.ToLower(string(a[i])) {
		case "match":
			match = a[i+1]
		case "count":
			if count, err = parseInt(a[i+1]); err != nil {
				writeErr(c, err) // Redis: not an integer
				return
			}
			if count < 1 {
				writeErr(c, errSyntax)
				return
			}
			count = min(count, 100000)
		case "type":
			typ = strings.ToLower(string(a[i+1]))
		default:
			writeErr(c, errSyntax)
			return
		}
	}
	var after []byte
	if cursor != 0 {
		var ok bool
		if after, ok = n.cursors.get(cursor); !ok {
			c.WriteError("ERR invalid cursor: unknown or expired on this node")
			return
		}
	}
	var keys [][]byte
	var last []byte
	examined := int64(0)
	more := false
	err = n.fsm.Scan(after, func(k []byte, kind fsm.Kind) bool {
		if examined == count {
			more = true
			return false
		}
		examined++
		last = append(last[:0], k...)
		if (match == nil || globMatch(match, k)) && (typ == "" || strings.ToLower(kind.TypeName()) == typ) {
			keys = append(keys, append([]byte(nil), k...))
		}
		return true
	})
	if err != nil {
		writeErr(c, err)
		return
	}
	next := uint64(0)
	if more {
		next = n.cursors.put(last)
	}
	c.WriteArray(2)
	c.WriteBulkString(fmt.Sprint(next))
	c.WriteArray(len(keys))
	for _, k := range keys {
		c.WriteBulk(k)
	}
}

// Bloom filters (RedisBloom's BF.*).

// Defaults of a filter BF.ADD, BF.MADD or BF.INSERT creates (RedisBloom's).
const (
	defaultErrorRate   = 0.01
	defaultCapacity    = 100
	defaultExpansion   = 2
	defaultCFCap       = 1024
	defaultCFExpansion = 1
	cuckooBucketSize   = 4 // filter.Cuckoo's slots per bucket
)

// parseBloomParams checks an error rate, capacity and expansion as
// BF.RESERVE does, with RedisBloom's messages.
func parseBloomParams(rate, capacity []byte) (float64, uint64, error) {
	r, err := parseFloat(rate)
	if err != nil {
		return 0, 0, errors.New("ERR bad error rate")
	}
	if !(r > 0 && r < 1) {
		return 0, 0, errors.New("ERR (0 < error rate range < 1)")
	}
	cp, err := parseInt(capacity)
	if err != nil {
		return 0, 0, errors.New("ERR bad capacity")
	}
	if cp <= 0 || cp > fsm.MaxCapacity {
		return 0, 0, errors.New("ERR (capacity should be larger than 0)")
	}
	return r, uint64(cp), nil
}

func parseExpansion(b []byte) (uint64, error) {
	e, err := parseInt(b)
	if err != nil {
		return 0, errors.New("ERR bad expansion")
	}
	if e < 1 || e > 1<<16 {
		return 0, errors.New("ERR expansion should be greater or equal to 1")
	}
	return uint64(e), nil
}

// cmdBFReserve: BF.RESERVE key error_rate capacity [EXPANSION e] [NONSCALING].
func cmdBFReserve(_ *Node, a [][]byte) (*fsm.Command, replyFunc, error) {
	rate, capacity, err := parseBloomParams(a[2], a[3])
	if err != nil {
		return nil, nil, err
	}
	c := &fsm.Command{Op: fsm.OpBFReserve, Key: a[1], ErrorRate: rate, Capacity: capacity, Expansion: defaultExpansion}
	expansion, nonscaling := false, false
	for i := 4; i < len(a); i++ {
		switch strings.ToLower(string(a[i])) {
		case "expansion":
			if i+1 >= len(a) {
				return nil, nil, errors.New("ERR no expansion") // RedisBloom's words
			}
			if c.Expansion, err = parseExpansion(a[i+1]); err != nil {
				return nil, nil, err
			}
			expansion = true
			i++
		case "nonscaling":
			nonscaling = true
		default:
			return nil, nil, errSyntax
		}
	}
	if expansion && nonscaling {
		return nil, nil, errNoCode("Nonscaling filters cannot expand")
	}
	if nonscaling {
		c.Expansion = 0
	}
	return c, replyOK, checkKey(a[1])
}

func bfAddCommand(key []byte, items [][]byte) *fsm.Command {
	return &fsm.Command{Op: fsm.OpBFAdd, Key: key, Items: items, ErrorRate: defaultErrorRate, Capacity: defaultCapacity, Expansion: defaultExpansion}
}

func cmdBFAdd(_ *Node, a [][]byte) (*fsm.Command, replyFunc, error) {
	return bfAddCommand(a[1], a[2:]), replyOne, checkKey(a[1])
}

func cmdBFMAdd(_ *Node, a [][]byte) (*fsm.Command, replyFunc, error) {
	return bfAddCommand(a[1], a[2:]), replyItems, checkKey(a[1])
}

// cmdBFInsert: BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x]
// [NOCREATE] [NONSCALING] ITEMS item [item ...]. Errors in RedisBloom's
// words, most without a code; NONSCALING wins over EXPANSION, as there.
func cmdBFInsert(_ *Node, a [][]byte) (*fsm.Command, replyFunc, error) {
	c := bfAddCommand(a[1], nil)
	nonscaling := false
	rateSet, capacitySet := false, false
	i := 2
	for ; i < len(a); i++ {
		opt := strings.ToLower(string(a[i]))
		if opt == "items" {
			i++
			break
		}
		switch opt {
		case "capacity", "error", "expansion":
			if i+1 >= len(a) {
				return nil, nil, errArity("bf.insert")
			}
			v := a[i+1]
			switch opt {
			case "capacity":
				n, err := parseInt(v)
				if err != nil {
					return nil, nil, errNoCode("Bad capacity")
				}
				if n < 1 || n > fsm.MaxCapacity {
					return nil, nil, errNoCode("Bad argument received")
				}
				c.Capacity, capacitySet = uint64(n), true
			case "error":
				r, err := parseFloat(v)
				if err != nil {
					return nil, nil, errNoCode("Bad error rate")
				}
				if !(r > 0 && r < 1) {
					return nil, nil, errNoCode("Bad argument received")
				}
				c.ErrorRate, rateSet = r, true
			default:
				e, err := parseInt(v)
				if err != nil {
					return nil, nil, errNoCode("Bad expansion")
				}
				if e < 1 || e > 1<<16 {
					return nil, nil, errNoCode("Bad argument received")
				}
				c.Expansion = uint64(e)
			}
			i++
		case "nocreate":
			c.Flags |= fsm.FlagNoCreate
		case "nonscaling":
			nonscaling = true
		default:
			return nil, nil, errNoCode("Unknown argument received")
		}
	}
	if i >= len(a) {
		return nil, nil, errArity("bf.insert")
	}
	c.Items = a[i:]
	if c.Flags&fsm.FlagNoCreate != 0 && (rateSet || capacitySet) {
		return nil, nil, errors.New("ERR NOCREATE cannot be used together with CAPACITY or ERROR")
	}
	if nonscaling {
		c.Expansion = 0
	}
	return c, replyItems, checkKey(a[1])
}

func cmdBFExists(n *Node, c *respConn, _ *connState, a [][]byte) {
	got, err := n.fsm.BFExists(a[1], a[2:])
	if err != nil {
		writeErr(c, err)
		return
	}
	if strings.EqualFold(string(a[0]), "bf.exists") {
		c.WriteInt(boolInt(got[0]))
		return
	}
	writeBools(c, got)
}

// cmdBFInfo: BF.INFO key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION]. With a
// field it answers a one-element array, as RedisBloom 2.4 and later do.
func cmdBFInfo(n *Node, c *respConn, _ *connState, a [][]byte) {
	if len(a) > 3 {
		c.WriteError("ERR wrong number of arguments for 'bf.info' command")
		return
	}
	info, err := n.fsm.BFInfo(a[1])
	if err != nil {
		writeErr(c, err)
		return
	}
	fields := []struct {
		arg, name string
		v         int64
	}{
		{"capacity", "Capacity", int64(info.Capacity)},
		{"size", "Size", int64(info.Size)},
		{"filters", "Number of filters", int64(info.Filters)},
		{"items", "Number of items inserted", int64(info.Items)},
		{"expansion", "Expansion rate", int64(info.Expansion)},
	}
	writeField := func(name string, v int64) {
		if name == "Expansion rate" && v == 0 {
			c.WriteNull() // NONSCALING
			return
		}
		c.WriteInt64(v)
	}
	if len(a) == 3 {
		want := strings.ToLower(string(a[2]))
		for _, f := range fields {
			if f.arg == want {
				c.WriteArray(1)
				writeField(f.name, f.v)
				return
			}
		}
		c.WriteError("ERR Invalid information value")
		return
	}
	c.WriteArray(2 * len(fields))
	for _, f := range fields {
		c.WriteString(f.name)
		writeField(f.name, f.v)
	}
}

func cmdBFCard(n *Node, c *respConn, _ *connState, a [][]byte) {
	card, err := n.fsm.BFCard(a[1])
	if err != nil {
		writeErr(c, err)
		return
	}
	c.WriteInt(card)
}

// Cuckoo filters (RedisBloom's CF.*).

// cmdCFReserve: CF.RESERVE key capacity [EXPANSION e]. RedisBloom's
// BUCKETSIZE and MAXITERATIONS are refused: filter.Cuckoo has 4-slot
// buckets and at most 500 evictions. A full filter grows by a new filter
// e times the size of the last (default 1; 0 never grows), as RedisBloom's.
func cmdCFReserve(_ *Node, a [][]byte) (*fsm.Command, replyFunc, error) {
	if len(a)%2 == 0 { // options come in pairs
		return nil, nil, errArity("cf.reserve")
	}
	capacity, err := parseInt(a[2])
	if err != nil {
		return nil, nil, errNoCode("Bad capacity")
	}
	if capacity < 2*cuckooBucketSize {
		return nil, nil, errNoCode("Capacity must be at least (BucketSize * 2)")
	}
	if capacity > fsm.MaxCapacity {
		return nil, nil, fmt.Errorf("ERR bloomkv: capacity above %d", int64(fsm.MaxCapacity))
	}
	c := &fsm.Command{Op: fsm.OpCFReserve, Key: a[1], Capacity: uint64(capacity), Expansion: defaultCFExpansion}
	for i := 3; i < len(a); i += 2 {
		switch strings.ToLower(string(a[i])) {
		case "expansion":
			e, err := parseInt(a[i+1])
			switch {
			case err != nil:
				return nil, nil, errNoCode("Couldn't parse EXPANSION")
			case e < 0:
				return nil, nil, errNoCode("EXPANSION parameter needs to be a non-negative integer")
			case e > fsm.MaxCuckooExpansion:
				return nil, nil, fmt.Errorf("ERR bad expansion (0 to %d)", fsm.MaxCuckooExpansion)
			}
			c.Expansion = uint64(e)
		case "bucketsize", "maxiterations":
			return nil, nil, errors.New("ERR bloomkv: CF.RESERVE takes no BUCKETSIZE or MAXITERATIONS (4-slot buckets, 500 evictions)")
		default:
			return nil, nil, errSyntax
		}
	}
	return c, replyOK, checkKey(a[1])
}

func cmdCFAdd(_ *Node, a [][]byte) (*fsm.Command, replyFunc, error) {
	c := &fsm.Command{Op: fsm.OpCFAdd, Key: a[1], Capacity: defaultCFCap, Expansion: defaultCFExpansion, Items: a[2:3]}
	if strings.EqualFold(string(a[0]), "cf.addnx") {
		c.Flags |= fsm.FlagNX
	}
	return c, replyOne, checkKey(a[1])
}

func cmdCFExists(n *Node, c *respConn, _ *connState, a [][]byte) {
	got, err := n.fsm.CFExists(a[1], a[2:])
	if err != nil {
		writeErr(c, err)
		return
	}
	if strings.EqualFold(string(a[0]), "cf.exists") {
		c.WriteInt(boolInt(got[0]))
		return
	}
	writeBools(c, got)
}

// cmdCFInfo: CF.INFO key, RedisBloom's fields. Items inserted are the
// fingerprints held (adds less deletes), as RedisBloom counts them.
func cmdCFInfo(n *Node, c *respConn, _ *connState, a [][]byte) {
	info, err := n.fsm.CFInfo(a[1])
	if err != nil {
		writeErr(c, err)
		return
	}
	fields := []struct {
		name string
		v    int64
	}{
		{"Size", int64(info.Size)},
		{"Number of buckets", int64(info.Buckets)},
		{"Number of filters", int64(info.Filters)},
		{"Number of items inserted", int64(info.Items)},
		{"Number of items deleted", int64(info.Deleted)},
		{"Bucket size", 4},
		{"Expansion rate", int64(info.Expansion)},
		{"Max iterations", 500},
	}
	c.WriteArray(2 * len(fields))
	for _, f := range fields {
		c.WriteString(f.name)
		c.WriteInt64(f.v)
	}
}

func cmdCFDel(_ *Node, a [][]byte) (*fsm.Command, replyFunc, error) {
	return &fsm.Command{Op: fsm.OpCFDel, Key: a[1], Items: a[2:3]}, replyN, checkKey(a[1])
}

// Cluster membership.

// cmdRaftJoin: RAFT.JOIN id raft-address [client-address]: adds a voter
// (on the leader; a follower answers NOTLEADER) and records its client
// address.
func cmdRaftJoin(n *Node, c *respConn, _ *connState, a [][]byte) {
	if len(a) > 4 {
		c.WriteError("ERR wrong number of arguments for 'raft.join' command")
		return
	}
	if n.raft.State() != raft.Leader {
		writeErr(c, n.errNotLeader())
		return
	}
	if err := n.changeMembership(func() raft.Future {
		return n.raft.AddVoter(raft.ServerID(a[1]), raft.ServerAddress(a[2]), 0, n.cfg.ApplyTimeout)
	}); err != nil {
		writeErr(c, err)
		return
	}
	if len(a) == 4 {
		cmd := fsm.Command{Op: fsm.OpSetNode, Key: a[1], Value: a[3]}
		f, err := n.submit(&cmd)
		if err == nil {
			_, err = n.result(f)
		}
		if err != nil {
			writeErr(c, err)
			return
		}
	}
	c.WriteString("OK")
}

func cmdRaftRemove(n *Node, c *respConn, _ *connState, a [][]byte) {
	if n.raft.State() != raft.Leader {
		writeErr(c, n.errNotLeader())
		return
	}
	if err := n.changeMembership(func() raft.Future {
		return n.raft.RemoveServer(raft.ServerID(a[1]), 0, n.cfg.ApplyTimeout)
	}); err != nil {
		writeErr(c, err)
		return
	}
	c.WriteString("OK")
}

// cmdRaftSnapshot takes a raft snapshot on this node now (and compacts its
// log down to the trailing entries).
func cmdRaftSnapshot(n *Node, c *respConn, _ *connState, _ [][]byte) {
	if err := n.raft.Snapshot().Error(); err != nil {
		writeErr(c, err)
		return
	}
	c.WriteString("OK")
}

// cmdInfo: INFO [section]: server, replication, raft, bloomkv.
func cmdInfo(n *Node, c *respConn, _ *connState, a [][]byte) {
	want := ""
	if len(a) > 1 {
		want = strings.ToLower(string(a[1]))
	}
	var b strings.Builder
	section := func(name string, kv [][2]string) {
		if want != "" && want != "all" && want != "everything" && want != strings.ToLower(name) {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		fmt.Fprintf(&b, "# %s\r\n", name)
		for _, p := range kv {
			fmt.Fprintf(&b, "%s:%s\r\n", p[0], p[1])
		}
	}
	section("Server", [][2]string{
		{"bloomkv_version", Version},
		{"node_id", n.cfg.ID},
		{"tcp_addr", n.Addr()},
		{"raft_addr", n.RaftAddr()},
		{"connected_clients", fmt.Sprint(n.clients.Load())},
	})
	role := "slave"
	if n.raft.State() == raft.Leader {
		role = "master"
	}
	leaderAddr, leaderID := n.raft.LeaderWithID()
	clientAddr, _ := n.fsm.Node(string(leaderID))
	section("Replication", [][2]string{
		{"role", role},
		{"raft_state", n.raft.State().String()},
		{"leader_id", string(leaderID)},
		{"leader_raft_addr", string(leaderAddr)},
		{"leader_addr", clientAddr},
		{"ready_for_linearizable_reads", fmt.Sprint(boolInt(n.IsLeader()))},
	})
	stats := n.raft.Stats()
	keys := make([]string, 0, len(stats))
	for k := range stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var kv [][2]string
	for _, k := range keys {
		kv = append(kv, [2]string{k, stats[k]})
	}
	section("Raft", kv)
	m := n.fsm.Metrics()
	kv = [][2]string{
		{"state_applied_index", fmt.Sprint(m.Applied)},
		{"fsm_snapshots", fmt.Sprint(m.Snapshots)},
		{"fsm_restores", fmt.Sprint(m.Restores)},
		{"fsm_restores_skipped", fmt.Sprint(m.RestoresSkipped)},
		{"cached_filters", fmt.Sprint(m.CachedFilters)},
		{"cached_filter_bytes", fmt.Sprint(m.CachedBytes)},
		{"cached_strings", fmt.Sprint(m.CachedStrings)},
		{"cached_string_bytes", fmt.Sprint(m.CachedStrBytes)},
	}
	if dm, err := n.fsm.DBMetrics(); err == nil {
		kv = append(kv, [2]string{"state_db_gets", fmt.Sprint(dm.Gets)},
			[2]string{"state_db_flushes", fmt.Sprint(dm.Flushes)},
			[2]string{"state_db_compactions", fmt.Sprint(dm.Compactions)})
		for i, l := range dm.Levels {
			if l.Files > 0 {
				kv = append(kv, [2]string{fmt.Sprintf("state_db_l%d", i), fmt.Sprintf("files=%d,bytes=%d", l.Files, l.Bytes)})
			}
		}
	}
	section("Bloomkv", kv)
	c.WriteBulkString(b.String())
}
