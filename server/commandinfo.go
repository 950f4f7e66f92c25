package server

import (
	"fmt"
	"sort"
	"strings"
)

// cmdDoc is what COMMAND, COMMAND INFO and COMMAND DOCS tell about one
// command of the table in resp.go.
type cmdDoc struct {
	summary string
	group   string // Redis's group names: string, generic, connection, server, cluster, module
	module  string // the module a RedisBloom command belongs to, for COMMAND DOCS
	// first, last, step: where the keys are (Redis's first key, last key
	// and step; last -1 is the last argument; all 0 for no keys).
	first, last, step int
}

// key1 is a command whose only key is its first argument.
func key1(summary, group string) cmdDoc {
	return cmdDoc{summary: summary, group: group, first: 1, last: 1, step: 1}
}

// noKeys is a command that names no key.
func noKeys(summary, group string) cmdDoc { return cmdDoc{summary: summary, group: group} }

func bloomDoc(summary string) cmdDoc {
	d := key1(summary, "module")
	d.module = "bf"
	return d
}

// cmdDocs holds an entry for every command in the table
// (TestCommandDocsCoverTable).
var cmdDocs = map[string]cmdDoc{
	"ping":      noKeys("Answers PONG, or echoes its argument.", "connection"),
	"echo":      noKeys("Answers with its argument.", "connection"),
	"quit":      noKeys("Closes the connection.", "connection"),
	"hello":     noKeys("Describes the server; only protocol 2 (RESP2) is spoken.", "connection"),
	"client":    noKeys("SETNAME, SETINFO, GETNAME and ID, accepted for clients that send them.", "connection"),
	"select":    noKeys("Selects database 0, the only one.", "connection"),
	"command":   noKeys("Describes the commands this server takes.", "server"),
	"readonly":  noKeys("Lets this connection read the node's own state (stale reads), followers included.", "cluster"),
	"readwrite": noKeys("Undoes READONLY: reads are linearizable again.", "cluster"),
	"info":      noKeys("Server, replication and keyspace information.", "server"),
	"config":    noKeys("CONFIG GET of the few settings clients ask for; settings are kvserver's flags.", "server"),
	"dbsize":    noKeys("Counts the keys (walks the whole key space).", "server"),
	"keys":      noKeys("Lists the keys matching a glob pattern (walks the whole key space).", "generic"),
	"ttl":       key1("Seconds to live: -2 for no key, -1 otherwise (keys do not expire).", "generic"),
	"pttl":      key1("Milliseconds to live: -2 for no key, -1 otherwise (keys do not expire).", "generic"),
	"incr":      key1("Adds 1 to an integer string, replicated.", "string"),
	"decr":      key1("Subtracts 1 from an integer string, replicated.", "string"),
	"incrby":    key1("Adds n to an integer string, replicated.", "string"),
	"decrby":    key1("Subtracts n from an integer string, replicated.", "string"),
	"expire":    key1("Refused: keys do not expire.", "generic"),
	"pexpire":   key1("Refused: keys do not expire.", "generic"),
	"expireat":  key1("Refused: keys do not expire.", "generic"),
	"pexpireat": key1("Refused: keys do not expire.", "generic"),
	"getex":     key1("Refused: keys do not expire (use GET).", "string"),
	"setex":     key1("Refused: keys do not expire (use SET).", "string"),
	"psetex":    key1("Refused: keys do not expire (use SET).", "string"),
	"get":       key1("The string value of a key.", "string"),
	"mget":      {summary: "The string values of several keys.", group: "string", first: 1, last: -1, step: 1},
	"exists":    {summary: "Counts the given keys that exist.", group: "generic", first: 1, last: -1, step: 1},
	"type":      key1("The kind of value a key holds: string, MBbloom--, MBbloomCF or none.", "generic"),
	"scan":      noKeys("Iterates over the keys in key order, with MATCH, COUNT and TYPE.", "generic"),
	"set":       key1("Sets a key's string value, with NX, XX and GET.", "string"),
	"del":       {summary: "Deletes keys.", group: "generic", first: 1, last: -1, step: 1},
	"getdel":    key1("Deletes a key's string value and returns it, replicated.", "string"),
	"flushall":  noKeys("Deletes every key.", "server"),
	"flushdb":   noKeys("Deletes every key (there is one database).", "server"),

	"bf.reserve": bloomDoc("Creates a scalable Bloom filter with an error rate and a capacity."),
	"bf.add":     bloomDoc("Adds an item to a Bloom filter, creating it if missing."),
	"bf.madd":    bloomDoc("Adds items to a Bloom filter, creating it if missing."),
	"bf.insert":  bloomDoc("Adds items to a Bloom filter, creating it with the given options if missing."),
	"bf.exists":  bloomDoc("Whether an item may be in a Bloom filter."),
	"bf.mexists": bloomDoc("Whether each item may be in a Bloom filter."),
	"bf.info":    bloomDoc("A Bloom filter's capacity, size, layers, items and expansion."),
	"bf.card":    bloomDoc("The number of items added to a Bloom filter."),
	"cf.reserve": bloomDoc("Creates a cuckoo filter with a capacity."),
	"cf.add":     bloomDoc("Adds an item to a cuckoo filter, creating it if missing."),
	"cf.addnx":   bloomDoc("Adds an item to a cuckoo filter unless it may be there already."),
	"cf.exists":  bloomDoc("Whether an item may be in a cuckoo filter."),
	"cf.mexists": bloomDoc("Whether each item may be in a cuckoo filter."),
	"cf.del":     bloomDoc("Deletes one copy of an item from a cuckoo filter."),
	"cf.info":    bloomDoc("A cuckoo filter's size, buckets, filters, items and settings."),

	"raft.join":     noKeys("Adds a node to the raft cluster (leader only).", "cluster"),
	"raft.remove":   noKeys("Removes a node from the raft cluster (leader only).", "cluster"),
	"raft.snapshot": noKeys("Takes a raft snapshot on this node now.", "cluster"),
}

// commandNames is the command table's names, sorted: the order COMMAND
// and its subcommands list them in.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// cmdCommand answers COMMAND and its subcommands COUNT, LIST, INFO and
// DOCS with the reply shapes of Redis 7.
func cmdCommand(_ *Node, c *respConn, _ *connState, a [][]byte) {
	if len(a) == 1 {
		names := commandNames()
		c.WriteArray(len(names))
		for _, name := range names {
			writeCommandInfo(c, name)
		}
		return
	}
	sub := strings.ToLower(string(a[1]))
	arity := map[string]int{"count": 2, "list": -2, "info": -2, "docs": -2}[sub]
	if arity == 0 {
		c.WriteError(fmt.Sprintf("ERR unknown subcommand '%s'. Try COMMAND HELP.", clip(a[1])))
		return
	}
	if (arity > 0 && len(a) != arity) || (arity < 0 && len(a) < -arity) {
		c.WriteError(fmt.Sprintf("ERR wrong number of arguments for 'command|%s' command", sub))
		return
	}
	switch sub {
	case "count":
		c.WriteInt(len(commands))
	case "list":
		if len(a) > 2 {
			c.WriteError("ERR syntax error") // FILTERBY is not supported
			return
		}
		names := commandNames()
		c.WriteArray(len(names))
		for _, name := range names {
			c.WriteBulkString(name)
		}
	case "info":
		if len(a) == 2 {
			cmdCommand(nil, c, nil, a[:1])
			return
		}
		c.WriteArray(len(a) - 2)
		for _, arg := range a[2:] {
			name := strings.ToLower(string(arg))
			if commands[name] == nil {
				c.WriteNull() // as Redis: a null for each unknown name
				continue
			}
			writeCommandInfo(c, name)
		}
	case "docs":
		// RESP2 flattens Redis's map: name, then the name's doc fields as
		// an array of key, value, key, value. Unknown names are left out,
		// so asking only for unknown names gives an empty array.
		var names []string
		if len(a) == 2 {
			names = commandNames()
		}
		for _, arg := range a[2:] {
			if name := strings.ToLower(string(arg)); commands[name] != nil {
				names = append(names, name)
			}
		}
		c.WriteArray(2 * len(names))
		for _, name := range names {
			d := cmdDocs[name]
			c.WriteBulkString(name)
			fields := [][2]string{{"summary", d.summary}, {"group", d.group}}
			if d.module != "" {
				fields = append(fields, [2]string{"module", d.module})
			}
			c.WriteArray(2 * len(fields))
			for _, f := range fields {
				c.WriteBulkString(f[0])
				c.WriteBulkString(f[1])
			}
		}
	}
}

// writeCommandInfo writes one command's entry of COMMAND's reply, the ten
// elements of Redis 7: name, arity, flags, first key, last key, step, ACL
// categories, tips, key specifications, subcommands. The last four are
// empty: there are no ACLs, and the first/last/step triple says where
// every command's keys are.
func writeCommandInfo(c *respConn, name string) {
	spec, d := commands[name], cmdDocs[name]
	c.WriteArray(10)
	c.WriteBulkString(name)
	c.WriteInt(spec.arity)
	var flags []string
	switch {
	case spec.kind == kindWrite:
		flags = []string{"write"}
	case spec.kind == kindRead:
		flags = []string{"readonly"}
	case strings.HasPrefix(name, "raft."):
		flags = []string{"admin"}
	}
	c.WriteArray(len(flags))
	for _, f := range flags {
		c.WriteString(f)
	}
	c.WriteInt(d.first)
	c.WriteInt(d.last)
	c.WriteInt(d.step)
	for range 4 {
		c.WriteArray(0)
	}
}
