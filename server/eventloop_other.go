//go:build !unix

package server

import (
	"errors"
	"net"
)

// Off unix there is no event loop (eventloop.go writes to its sockets with
// unix.Write): every connection is served on a goroutine of its own, as
// with Config.ConnGoroutines.
type loopServer struct{}

func (n *Node) startLoop() error { return nil }

func (s *loopServer) enroll(net.Conn) error { return errors.New("bloomkv/server: no event loop") }

func (s *loopServer) stop() {}

func (s *loopServer) counts() (offloads, detaches, pauses int64) { return 0, 0, 0 }
