package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestStrings(t *testing.T) {
	_, c := singleNode(t)
	if v, err := c.Ping(ctx).Result(); v != "PONG" || err != nil {
		t.Fatalf("PING = %q, %v", v, err)
	}
	if v, err := c.Echo(ctx, "hi").Result(); v != "hi" || err != nil {
		t.Fatalf("ECHO = %q, %v", v, err)
	}
	if err := c.Get(ctx, "a").Err(); err != redis.Nil {
		t.Fatalf("GET absent: %v", err)
	}
	if err := c.Set(ctx, "a", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Get(ctx, "a").Result(); v != "1" {
		t.Fatalf("GET a = %q", v)
	}
	// NX, XX, GET.
	if ok, _ := c.SetNX(ctx, "a", "2", 0).Result(); ok {
		t.Fatal("SET NX on a present key")
	}
	if ok, _ := c.SetXX(ctx, "b", "2", 0).Result(); ok {
		t.Fatal("SET XX on an absent key")
	}
	if old, err := c.SetArgs(ctx, "a", "3", redis.SetArgs{Get: true}).Result(); old != "1" || err != nil {
		t.Fatalf("SET GET = %q, %v", old, err)
	}
	if err := c.Set(ctx, "a", "x", 10_000_000_000).Err(); err == nil || !strings.Contains(err.Error(), "expire") {
		t.Fatalf("SET EX: %v", err)
	}
	// Binary-safe values, empty values.
	bin := string([]byte{0, 1, '\r', '\n', 255})
	c.Set(ctx, "bin", bin, 0)
	c.Set(ctx, "empty", "", 0)
	vals, err := c.MGet(ctx, "a", "nope", "bin", "empty").Result()
	if err != nil || fmt.Sprint(vals) != fmt.Sprint([]any{"3", nil, bin, ""}) {
		t.Fatalf("MGET = %q, %v", vals, err)
	}
	if n, _ := c.Exists(ctx, "a", "a", "nope", "empty").Result(); n != 3 {
		t.Fatalf("EXISTS = %d", n)
	}
	if n, _ := c.Del(ctx, "a", "a", "nope", "bin").Result(); n != 2 {
		t.Fatalf("DEL = %d", n)
	}
	if n, _ := c.Del(ctx, "empty").Result(); n != 1 {
		t.Fatalf("DEL one = %d", n)
	}
	if n, _ := c.Exists(ctx, "a", "bin", "empty").Result(); n != 0 {
		t.Fatalf("EXISTS after DEL = %d", n)
	}
	c.Set(ctx, "s", "x", 0)
	c.BFAdd(ctx, "bf", "x")
	c.CFAdd(ctx, "cf", "x")
	for key, want := range map[string]string{"s": "string", "bf": "MBbloom--", "cf": "MBbloomCF", "none": "none"} {
		if typ, _ := c.Type(ctx, key).Result(); typ != want {
			t.Errorf("TYPE %s = %q, want %q", key, typ, want)
		}
	}
	if err := c.Get(ctx, "bf").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("GET of a filter: %v", err)
	}
	// SET replaces a filter, as Redis's SET replaces any type.
	c.Set(ctx, "bf", "now a string", 0)
	if v, _ := c.Get(ctx, "bf").Result(); v != "now a string" {
		t.Fatalf("GET bf = %q", v)
	}
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, "s", "bf", "cf").Result(); n != 0 {
		t.Fatalf("after FLUSHALL %d keys exist", n)
	}
}

func TestScan(t *testing.T) {
	_, c := singleNode(t)
	pipe := c.Pipeline()
	var want []string
	for i := range 250 {
		k := fmt.Sprintf("key:%03d", i)
		want = append(want, k)
		pipe.Set(ctx, k, "v", 0)
	}
	pipe.BFAdd(ctx, "filter:1", "x")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	var cursor uint64
	calls := 0
	for {
		keys, next, err := c.Scan(ctx, cursor, "key:*", 40).Result()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, keys...)
		calls++
		if cursor = next; cursor == 0 {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("SCAN returned %d keys (%v...)", len(got), got[:min(5, len(got))])
	}
	if calls != 7 { // 251 keys, 40 examined a call
		t.Fatalf("%d calls", calls)
	}
	keys, _, err := c.ScanType(ctx, 0, "", 1000, "MBbloom--").Result()
	if err != nil || fmt.Sprint(keys) != "[filter:1]" {
		t.Fatalf("SCAN TYPE = %v, %v", keys, err)
	}
	if err := c.Scan(ctx, 12345, "", 10).Err(); err == nil {
		t.Fatal("an unknown cursor was accepted")
	}
	if err := c.Do(ctx, "SCAN", "x").Err(); err == nil {
		t.Fatal("a non-numeric cursor was accepted")
	}
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"a*", "bac", false},
		{"*c", "abc", true}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"h[ae]llo", "hello", true}, {"h[ae]llo", "hillo", false}, {"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false}, {"h[a-b]llo", "hbllo", true}, {"h[a-b]llo", "hcllo", false},
		{`h\*llo`, "h*llo", true}, {`h\*llo`, "hello", false}, {"*a*b*c*", "xaxbxcx", true},
		{"*a*b*c*", "xaxcxbx", false}, {"a**", "a", true},
	} {
		if got := globMatch([]byte(tc.p), []byte(tc.s)); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.p, tc.s, got)
		}
	}
}

func TestInfo(t *testing.T) {
	_, c := singleNode(t)
	info, err := c.Info(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Server", "role:master", "raft_state:Leader", "# Raft", "state_applied_index:"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q", want)
		}
	}
	if repl, _ := c.Info(ctx, "replication").Result(); strings.Contains(repl, "# Server") || !strings.Contains(repl, "# Replication") {
		t.Errorf("INFO replication = %q", repl)
	}
}

// TestDefaultClientOptions: go-redis with its defaults (it opens with
// HELLO 3 and identifies itself with CLIENT SETINFO) falls back to RESP2
// and works, as the README says.
func TestDefaultClientOptions(t *testing.T) {
	n, _ := singleNode(t)
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	if err := c.Set(ctx, "a", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "a").Result(); v != "1" || err != nil {
		t.Fatalf("GET = %q, %v", v, err)
	}
	if ok, err := c.BFAdd(ctx, "b", "x").Result(); !ok || err != nil {
		t.Fatalf("BF.ADD = %v, %v", ok, err)
	}
	if info, err := c.BFInfo(ctx, "b").Result(); err != nil || info.Capacity != 100 {
		t.Fatalf("BF.INFO = %+v, %v", info, err)
	}
}
