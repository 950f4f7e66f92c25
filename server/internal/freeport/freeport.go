// Package freeport finds loopback TCP addresses for tests that must name
// a port before the process that binds it starts (a raft address that a
// restarted node must get back, a kvserver child process).
//
// A port the kernel hands out for ":0" is one of its ephemeral ports, and
// so is the local port of every outgoing connection: between the test
// closing its probe listener and the node binding the port, another
// test's connection may take it ("address already in use"; seen in CI).
// Ports below the ephemeral range are never given to outgoing
// connections, so Addr picks one of those at random and checks that it
// can be bound; only where that range is too small does it fall back to
// ":0".
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the first port Addr considers: below it sit well-known and
// registered services a machine may run.
const lowest = 10000

// Addr returns "127.0.0.1:port" for a port that was free a moment ago.
func Addr() (string, error) {
	if lo := ephemeralLow(); lo-lowest >= 1000 {
		for range 100 {
			addr := "127.0.0.1:" + strconv.Itoa(lowest+rand.IntN(lo-lowest))
			if ln, err := net.Listen("tcp", addr); err == nil {
				ln.Close()
				return addr, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("freeport: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0
// when it cannot be read (not Linux).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}
