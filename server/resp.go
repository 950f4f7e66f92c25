package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/server/fsm"
)

// connState is what a client connection remembers.
type connState struct {
	stale bool // reads skip the leader check (READONLY)
}

// replyFunc writes a write command's reply once its result is known.
type replyFunc func(c *respConn, r *fsm.Result)

// command is one entry of the command table. A write builds a state
// machine command (and the reply to give once it is applied); a read runs
// against the local state after the read check; an admin command runs
// as it is.
type command struct {
	name  string // lower case, as the key of the table (set by init)
	idx   int    // its place in the table's order, for per-node lists (set by init)
	arity int    // Redis's convention: n exactly n arguments (with the name), -n at least n
	kind  cmdKind
	slow  bool // may take long or wait (a full scan, a membership change): never on the event loop
	write func(n *Node, args [][]byte) (*fsm.Command, replyFunc, error)
	run   func(n *Node, c *respConn, cs *connState, args [][]byte)
}

type cmdKind uint8

const (
	kindAdmin cmdKind = iota
	kindRead
	kindWrite
)

var commands map[string]*command

func init() {
	commands = map[string]*command{
		"ping":    {arity: -1, run: cmdPing},
		"echo":    {arity: 2, run: func(_ *Node, c *respConn, _ *connState, a [][]byte) { c.WriteBulk(a[1]) }},
		"quit":    {arity: -1, run: func(_ *Node, c *respConn, _ *connState, _ [][]byte) { c.WriteString("OK"); c.Close() }},
		"hello":   {arity: -1, run: cmdHello},
		"client":  {arity: -2, run: cmdClient},
		"select":  {arity: 2, run: cmdSelect},
		"command": {arity: -1, run: cmdCommand},
		"readonly": {arity: 1, run: func(_ *Node, c *respConn, cs *connState, _ [][]byte) {
			cs.stale = true
			c.WriteString("OK")
		}},
		"readwrite": {arity: 1, run: func(_ *Node, c *respConn, cs *connState, _ [][]byte) {
			cs.stale = false
			c.WriteString("OK")
		}},
		"info":   {arity: -1, run: cmdInfo},
		"config": {arity: -2, run: cmdConfig},
		"dbsize": {arity: 1, kind: kindRead, slow: true, run: cmdDBSize},
		"keys":   {arity: 2, kind: kindRead, slow: true, run: cmdKeys},
		"ttl":    {arity: 2, kind: kindRead, run: cmdTTL},
		"pttl":   {arity: 2, kind: kindRead, run: cmdTTL},
		"incr":   {arity: 2, kind: kindWrite, write: cmdIncr},
		"decr":   {arity: 2, kind: kindWrite, write: cmdIncr},
		"incrby": {arity: 3, kind: kindWrite, write: cmdIncr},
		"decrby": {arity: 3, kind: kindWrite, write: cmdIncr},

		"expire":    {arity: -3, run: cmdNoExpiry},
		"pexpire":   {arity: -3, run: cmdNoExpiry},
		"expireat":  {arity: -3, run: cmdNoExpiry},
		"pexpireat": {arity: -3, run: cmdNoExpiry},
		"getex":     {arity: -2, run: cmdNoExpiry},
		"setex":     {arity: 4, run: cmdNoExpiry},
		"psetex":    {arity: 4, run: cmdNoExpiry},

		"get":      {arity: 2, kind: kindRead, run: cmdGet},
		"mget":     {arity: -2, kind: kindRead, run: cmdMGet},
		"exists":   {arity: -2, kind: kindRead, run: cmdExists},
		"type":     {arity: 2, kind: kindRead, run: cmdType},
		"scan":     {arity: -2, kind: kindRead, run: cmdScan},
		"set":      {arity: -3, kind: kindWrite, write: cmdSet},
		"del":      {arity: -2, kind: kindWrite, write: cmdDel},
		"getdel":   {arity: 2, kind: kindWrite, write: cmdGetDel},
		"flushall": {arity: -1, kind: kindWrite, write: cmdFlushAll},
		"flushdb":  {arity: -1, kind: kindWrite, write: cmdFlushAll},

		"bf.reserve": {arity: -4, kind: kindWrite, write: cmdBFReserve},
		"bf.add":     {arity: 3, kind: kindWrite, write: cmdBFAdd},
		"bf.madd":    {arity: -3, kind: kindWrite, write: cmdBFMAdd},
		"bf.insert":  {arity: -4, kind: kindWrite, write: cmdBFInsert},
		"bf.exists":  {arity: 3, kind: kindRead, run: cmdBFExists},
		"bf.mexists": {arity: -3, kind: kindRead, run: cmdBFExists},
		"bf.info":    {arity: -2, kind: kindRead, run: cmdBFInfo},
		"bf.card":    {arity: 2, kind: kindRead, run: cmdBFCard},
		"cf.reserve": {arity: -3, kind: kindWrite, write: cmdCFReserve},
		"cf.add":     {arity: 3, kind: kindWrite, write: cmdCFAdd},
		"cf.addnx":   {arity: 3, kind: kindWrite, write: cmdCFAdd},
		"cf.exists":  {arity: 3, kind: kindRead, run: cmdCFExists},
		"cf.mexists": {arity: -3, kind: kindRead, run: cmdCFExists},
		"cf.del":     {arity: 3, kind: kindWrite, write: cmdCFDel},
		"cf.info":    {arity: 2, kind: kindRead, run: cmdCFInfo},

		"raft.join":     {arity: -3, slow: true, run: cmdRaftJoin},
		"raft.remove":   {arity: 2, slow: true, run: cmdRaftRemove},
		"raft.snapshot": {arity: 1, slow: true, run: cmdRaftSnapshot},
	}
	i := 0
	for name, c := range commands {
		c.name, c.idx = name, i
		i++
	}
}

// pendingWrite is a write handed to the batcher whose reply is still owed.
type pendingWrite struct {
	p     *proposal
	reply replyFunc
	m     *cmdMetric
	start time.Time
}

// burst is what a connection keeps across the commands of one pipelined
// burst (the complete commands one read brought in). Writes are handed
// to the batcher together, so that they share one raft entry (with other
// clients' writes), and their replies are written in order once each is
// applied; a read or any other command first waits for the writes
// before it, so every client sees its own writes in order. One leader
// check serves every read of a run of reads.
type burst struct {
	pending []pendingWrite
	checked bool // a leader check covers the reads since the last write
}

// endBurst answers the burst's pending writes and starts a new burst: the
// next read's commands arrive after these replies, and need a leader
// check of their own.
func (n *Node) endBurst(c *respConn, b *burst) {
	n.flushWrites(c, b)
	b.checked = false
}

// flushWrites waits for the pending writes and writes their replies.
func (n *Node) flushWrites(c *respConn, b *burst) {
	if len(b.pending) == 0 {
		return
	}
	werr := n.waitWrites(c.writes)
	now := time.Now()
	for i, p := range b.pending {
		switch {
		case werr != nil:
			c.WriteError(werr.Error())
		case p.p.err != nil:
			c.WriteError(p.p.err.Error())
			n.metrics.writeReply.Observe(now.Sub(p.p.answered).Seconds())
		default:
			p.reply(c, p.p.res)
			n.metrics.writeReply.Observe(now.Sub(p.p.answered).Seconds())
		}
		p.m.observeSpan(p.start, now)
		b.pending[i] = pendingWrite{} // let the results go
	}
	b.pending = b.pending[:0]
	c.writes.reuse()
}

// runCommand runs one command of a burst, which began at start (the
// time the last command ended, or the burst was read), and returns the
// time it ended: one clock reading per command serves as the end of one
// and the start of the next (issue 29: two readings per command were 7%
// of pipelined GETs' CPU time). A write's latency is observed when its
// reply is written (flushWrites).
func (n *Node) runCommand(c *respConn, b *burst, args [][]byte, start time.Time) time.Time {
	var lower [24]byte
	return n.runSpec(c, b, lookupCommand(args[0], &lower), args, start)
}

// runSpec is runCommand for a command already looked up (nil: unknown).
func (n *Node) runSpec(c *respConn, b *burst, spec *command, args [][]byte, start time.Time) time.Time {
	var m *cmdMetric
	if spec != nil {
		m = n.metrics.cmdList[spec.idx]
	} else {
		m = n.metrics.unknown
	}
	done := func() time.Time {
		end := time.Now()
		m.observeSpan(start, end)
		return end
	}
	if spec == nil {
		n.flushWrites(c, b)
		c.WriteError(unknownCommand(args))
		return done()
	}
	if !spec.arityOK(len(args)) {
		n.flushWrites(c, b)
		c.WriteError(fmt.Sprintf("ERR wrong number of arguments for '%s' command", spec.name))
		return done()
	}
	switch spec.kind {
	case kindWrite:
		if err := n.proposeWrite(c, b, spec, m, args, start, true); err != nil {
			n.flushWrites(c, b)
			c.WriteError(err.Error())
			return done()
		}
		return start
	case kindRead:
		n.flushWrites(c, b)
		if !c.state.stale && !b.checked {
			if err := n.readBarrier(); err != nil {
				c.WriteError(err.Error())
				return done()
			}
			b.checked = true
		}
		spec.run(n, c, &c.state, args)
	default:
		n.flushWrites(c, b)
		spec.run(n, c, &c.state, args)
	}
	return done()
}

// proposeWrite builds a write command and hands it to the batcher, its
// reply owed in b; or returns the error the client gets instead (a bad
// argument, an entry too large), which is written after the replies of the
// writes before it. With wait false it returns errWouldWait, having done
// nothing, when the batcher's queue is full.
func (n *Node) proposeWrite(c *respConn, b *burst, spec *command, m *cmdMetric, args [][]byte, start time.Time, wait bool) error {
	cmd, reply, err := spec.write(n, args)
	var p *proposal
	if err == nil {
		p, err = n.propose(c.writes, cmd, start, wait)
	}
	if err != nil {
		return err
	}
	b.pending = append(b.pending, pendingWrite{p: p, reply: reply, m: m, start: start})
	b.checked = false
	return nil
}

// arityOK reports whether a call of args arguments (the name included)
// fits the command's arity.
func (spec *command) arityOK(args int) bool {
	switch {
	case spec.arity > 0:
		return args == spec.arity
	case spec.arity < 0:
		return args >= -spec.arity
	}
	return true
}

// lookupCommand finds a command by its name in any case. Names of the
// table are short: a longer one is not in it, and a shorter one is
// lowered in buf, so that the lookup allocates nothing (the map index
// with string(bytes) does not copy).
func lookupCommand(name []byte, buf *[24]byte) *command {
	if len(name) > len(buf) {
		return nil
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return commands[string(buf[:len(name)])]
}

// unknownCommand is Redis's error for a command it does not know: the
// name (at most 128 bytes) and the first arguments, each quoted and
// followed by a space, until 128 bytes of them are written (the last one
// cut to fit), with CR and LF turned into spaces so that the reply stays
// one line.
func unknownCommand(args [][]byte) string {
	var b []byte
	for _, a := range args[1:] {
		if len(b) >= 128 {
			break
		}
		room := 128 - len(b)
		b = append(append(append(b, '\''), a[:min(len(a), room)]...), '\'', ' ')
	}
	msg := fmt.Sprintf("ERR unknown command '%s', with args beginning with: %s", args[0][:min(len(args[0]), 128)], b)
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(msg)
}

// clip shortens a client's bytes for an error message.
func clip(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

// errNoCode is an error sent as it is, without "ERR ": RedisBloom sends
// many of its errors so, and clients compare the text.
type errNoCode string

func (e errNoCode) Error() string { return string(e) }

// errArity is Redis's wrong-number-of-arguments error for command name.
func errArity(name string) error {
	return fmt.Errorf("ERR wrong number of arguments for '%s' command", name)
}

var (
	errNotInt   = errors.New("ERR value is not an integer or out of range")
	errNotFloat = errors.New("ERR value is not a valid float")
	errSyntax   = errors.New("ERR syntax error")
)

func parseInt(b []byte) (int64, error) {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, errNotInt
	}
	return v, nil
}

func parseUint(b []byte) (uint64, error) {
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, errNotInt
	}
	return v, nil
}

func parseFloat(b []byte) (float64, error) {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, errNotFloat
	}
	return v, nil
}

func writeErr(c *respConn, err error) {
	var fe *fsm.Error
	if errors.As(err, &fe) {
		c.WriteError(fe.Msg)
		return
	}
	var nc errNoCode
	if errors.As(err, &nc) {
		c.WriteError(string(nc))
		return
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, ' '); i > 0 && msg[:i] == strings.ToUpper(msg[:i]) {
		c.WriteError(msg) // already in RESP form ("TRYAGAIN ...")
		return
	}
	c.WriteError("ERR " + msg)
}

func writeBools(c *respConn, bs []bool) {
	c.WriteArray(len(bs))
	for _, b := range bs {
		c.WriteInt(boolInt(b))
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// replyItems writes per-item results: an array of integers or errors.
func replyItems(c *respConn, r *fsm.Result) {
	if r.Err != nil {
		writeErr(c, r.Err)
		return
	}
	c.WriteArray(len(r.Ints))
	for i, v := range r.Ints {
		if r.ItemErrs != nil && r.ItemErrs[i] != nil {
			writeErr(c, r.ItemErrs[i])
			continue
		}
		c.WriteInt64(v)
	}
}

// replyOne writes the single item of a BF.ADD / CF.ADD.
func replyOne(c *respConn, r *fsm.Result) {
	switch {
	case r.Err != nil:
		writeErr(c, r.Err)
	case r.ItemErrs != nil && r.ItemErrs[0] != nil:
		writeErr(c, r.ItemErrs[0])
	default:
		c.WriteInt64(r.Ints[0])
	}
}

func replyOK(c *respConn, r *fsm.Result) {
	if r.Err != nil {
		writeErr(c, r.Err)
		return
	}
	c.WriteString("OK")
}

func replyN(c *respConn, r *fsm.Result) {
	if r.Err != nil {
		writeErr(c, r.Err)
		return
	}
	c.WriteInt64(r.N)
}
