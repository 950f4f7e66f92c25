package server

import (
	"errors"
	"fmt"
	"io"
	"net"
)

// The RESP parser (redcon) buffers a whole command before the handler sees
// it and has no limit of its own: a client declaring a bulk string of a
// terabyte would have the server grow its buffer for as long as bytes
// arrive. guardConn follows the request stream's framing as it is read and
// refuses what is too big before it is buffered, as Redis does with
// proto-max-bulk-len: the client gets "-ERR Protocol error: ..." and is
// disconnected.

const (
	maxArgs   = 1 << 20  // arguments of one command (Redis: 1024*1024)
	maxInline = 64 << 10 // an inline (non-RESP) command line
)

type guardListener struct {
	net.Listener
	maxBulk, maxCommand int64
}

func (l *guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardConn{Conn: c, g: respGuard{maxBulk: l.maxBulk, maxCommand: l.maxCommand}}, nil
}

type guardConn struct {
	net.Conn
	g   respGuard
	err error
}

// errRefused ends the connection after the protocol error was sent.
var errRefused = errors.New("bloomkv/server: request refused")

func (c *guardConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if gerr := c.g.feed(p[:n]); gerr != nil {
		// redcon has flushed every earlier reply before it reads again, so
		// this error goes out after them.
		io.WriteString(c.Conn, "-ERR Protocol error: "+gerr.Error()+"\r\n")
		c.err = errRefused
		return 0, io.EOF
	}
	return n, err
}

// respGuard tracks where the request stream is in the RESP framing:
//
//	'*' count CRLF, then count times: '$' length CRLF, length bytes, CRLF
//
// or an inline command line. It checks lengths against the limits; the
// parser itself still rejects what is malformed.
type respGuard struct {
	maxBulk, maxCommand int64

	state    guardState
	num      int64 // the number being read
	args     int64 // arguments left in the command
	skip     int64 // bulk bytes (and CRLF) left
	cmdBytes int64 // bulk bytes of the command so far
	line     int   // bytes of the inline line so far
}

type guardState uint8

const (
	gStart  guardState = iota // before a command
	gCount                    // in "*count\r\n"
	gDollar                   // expecting '$'
	gLen                      // in "$len\r\n"
	gBody                     // in a bulk string and its CRLF
	gInline                   // in an inline command line
)

func (g *respGuard) feed(p []byte) error {
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch g.state {
		case gStart:
			switch b {
			case '*':
				g.state, g.num, g.cmdBytes = gCount, 0, 0
			case '\r', '\n':
			default:
				g.state, g.line = gInline, 1
			}
		case gCount, gLen:
			switch {
			case b >= '0' && b <= '9':
				g.num = g.num*10 + int64(b-'0')
				if g.state == gCount && g.num > maxArgs {
					return fmt.Errorf("invalid multibulk length (more than %d arguments)", maxArgs)
				}
				if g.state == gLen && g.num > g.maxBulk {
					return fmt.Errorf("invalid bulk length (bulk strings are limited to %d bytes)", g.maxBulk)
				}
			case b == '\r':
			case b == '\n':
				if g.state == gCount {
					g.args = g.num
					g.state = gDollar
					if g.args == 0 {
						g.state = gStart
					}
					break
				}
				if g.cmdBytes += g.num; g.cmdBytes > g.maxCommand {
					return fmt.Errorf("command too big (commands are limited to %d bytes)", g.maxCommand)
				}
				g.skip, g.state = g.num+2, gBody
			default:
				return errors.New("invalid length")
			}
		case gDollar:
			if b != '$' {
				return fmt.Errorf("expected '$', got '%c'", b)
			}
			g.state, g.num = gLen, 0
		case gBody:
			n := min(g.skip, int64(len(p)-i))
			g.skip -= n
			i += int(n) - 1
			if g.skip == 0 {
				if g.args--; g.args == 0 {
					g.state = gStart
				} else {
					g.state = gDollar
				}
			}
		case gInline:
			if b == '\n' {
				g.state = gStart
			} else if g.line++; g.line > maxInline {
				return errors.New("too big inline request")
			}
		}
	}
	return nil
}
