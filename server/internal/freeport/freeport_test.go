package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestAddrBindableBelowEphemeral: the address can be bound, and on Linux
// its port lies below the ephemeral range, where outgoing connections
// never take it.
func TestAddrBindableBelowEphemeral(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		ln.Close()
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if lo := ephemeralLow(); lo-lowest >= 1000 && (port < lowest || port >= lo) {
			t.Fatalf("port %d outside [%d, %d)", port, lowest, lo)
		}
		seen[addr] = true
	}
	if len(seen) < 10 {
		t.Fatalf("20 calls gave only %d addresses", len(seen))
	}
}
