package server

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestRedisBasics: the commands of issue 29 answer as Redis 7.0 does, or
// refuse clearly (expiry).
func TestRedisBasics(t *testing.T) {
	_, c := singleNode(t)
	if n, err := c.Incr(ctx, "n").Result(); n != 1 || err != nil {
		t.Fatalf("INCR = %v, %v", n, err)
	}
	if n, err := c.IncrBy(ctx, "n", 41).Result(); n != 42 || err != nil {
		t.Fatalf("INCRBY = %v, %v", n, err)
	}
	if n, err := c.Decr(ctx, "n").Result(); n != 41 || err != nil {
		t.Fatalf("DECR = %v, %v", n, err)
	}
	if n, err := c.DecrBy(ctx, "n", 50).Result(); n != -9 || err != nil {
		t.Fatalf("DECRBY = %v, %v", n, err)
	}
	if v := c.Get(ctx, "n").Val(); v != "-9" {
		t.Fatalf("GET after increments = %q", v)
	}
	c.Set(ctx, "s", "abc", 0)
	if err := c.Incr(ctx, "s").Err(); err == nil || err.Error() != "ERR value is not an integer or out of range" {
		t.Fatalf("INCR on a non-integer: %v", err)
	}
	c.BFAdd(ctx, "bf", "x")
	if err := c.Incr(ctx, "bf").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("INCR on a filter: %v", err)
	}
	// GETDEL answers the value it deleted, nil for no key, WRONGTYPE for a
	// filter (which stays).
	c.Set(ctx, "g", "abc", 0)
	if v, err := c.GetDel(ctx, "g").Result(); v != "abc" || err != nil {
		t.Fatalf("GETDEL = %q, %v", v, err)
	}
	if n := c.Exists(ctx, "g").Val(); n != 0 {
		t.Fatalf("EXISTS after GETDEL = %d", n)
	}
	if err := c.GetDel(ctx, "g").Err(); err != redis.Nil {
		t.Fatalf("GETDEL of no key: %v", err)
	}
	if err := c.GetDel(ctx, "bf").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("GETDEL of a filter: %v", err)
	}
	if n := c.Exists(ctx, "bf").Val(); n != 1 {
		t.Fatal("GETDEL of a filter deleted it")
	}
	// Concurrent increments through one pipeline share an entry and each
	// still counts.
	pipe := c.Pipeline()
	for range 100 {
		pipe.Incr(ctx, "p")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if v := c.Get(ctx, "p").Val(); v != "100" {
		t.Fatalf("100 pipelined INCRs gave %q", v)
	}
	if n, err := c.DBSize(ctx).Result(); n != 4 || err != nil {
		t.Fatalf("DBSIZE = %v, %v (want n, s, bf, p)", n, err)
	}
	if ks, err := c.Keys(ctx, "*").Result(); strings.Join(ks, ",") != "bf,n,p,s" || err != nil {
		t.Fatalf("KEYS * = %v, %v", ks, err)
	}
	if ks := c.Keys(ctx, "[np]").Val(); strings.Join(ks, ",") != "n,p" {
		t.Fatalf("KEYS [np] = %v", ks)
	}
	if n := c.Do(ctx, "TTL", "n").Val(); n != int64(-1) {
		t.Fatalf("TTL of a key = %v", n)
	}
	if n := c.Do(ctx, "PTTL", "absent").Val(); n != int64(-2) {
		t.Fatalf("PTTL of no key = %v", n)
	}
	for _, args := range [][]any{{"EXPIRE", "n", "10"}, {"SET", "e", "v", "EX", "10"}, {"SETEX", "e", "10", "v"}} {
		if err := c.Do(ctx, args...).Err(); err == nil || !strings.Contains(err.Error(), "keys do not expire") {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if n := c.Exists(ctx, "e").Val(); n != 0 {
		t.Fatal("a refused SET EX stored its key")
	}
	got, err := c.ConfigGet(ctx, "*").Result()
	if err != nil || got["save"] != "" || got["appendonly"] != "yes" || got["databases"] != "1" {
		t.Fatalf("CONFIG GET * = %v, %v", got, err)
	}
	if got := c.ConfigGet(ctx, "appendonly").Val(); len(got) != 1 {
		t.Fatalf("CONFIG GET appendonly = %v", got)
	}
	if err := c.ConfigSet(ctx, "save", "").Err(); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("CONFIG SET: %v", err)
	}
}
