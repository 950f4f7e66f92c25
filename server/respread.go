package server

import (
	"bytes"
	"fmt"
	"io"
)

// The request reader: splits a client's byte stream into commands.
//
// A request is either a RESP array of bulk strings,
//
//	'*' count CRLF, then count times: '$' length CRLF, length bytes, CRLF
//
// or an inline command: one line of words, split as redis-cli and Redis
// split them (quotes, backslash escapes). The reader parses in place: a
// command's arguments are slices of the connection's read buffer, valid
// until the next call of next or fill, so a pipelined burst costs no
// allocation per command (issue 29: redcon, the parser before, copied every
// command and built an argument slice for it, most of the bytes a
// pipelined GET allocated). It also enforces the limits Redis does
// (proto-max-bulk-len and the like) as the lengths arrive, before the
// bytes they announce are buffered: a client that declares a bulk of a
// terabyte is refused at its header.
//
// A command that arrives over several reads is parsed as it arrives: the
// reader keeps its place (offsets, not slices, so that the buffer may move
// when it grows) and goes on from there, so a command of a million
// arguments is not parsed again from its start after every read.

const (
	maxArgs   = 1 << 20  // arguments of one command (Redis: 1024*1024)
	maxInline = 64 << 10 // an inline command line (Redis: PROTO_INLINE_MAX_SIZE)
	// maxLengthLine bounds a "*count" or "$length" line after its first
	// byte: the sign, the digits, CR and LF. Longer is not a number any
	// limit allows, so the reader refuses it instead of waiting for more.
	maxLengthLine = 24

	readBufSize = 16 << 10 // a connection's read buffer to begin with, and to shrink back to
	readMin     = 4 << 10  // the least free room a read is given
)

// protocolError is a malformed or oversized request. The client gets
// "-ERR Protocol error: " and the text (Redis's), then the connection
// closes: the reader no longer knows where the next command starts.
type protocolError string

func (e protocolError) Error() string { return "Protocol error: " + string(e) }

const (
	errMultibulkLen = protocolError("invalid multibulk length")
	errBulkLen      = protocolError("invalid bulk length")
	errInlineTooBig = protocolError("too big inline request")
	errUnbalanced   = protocolError("unbalanced quotes in request")
)

type respReader struct {
	maxBulk, maxCommand int // constant after newRespReader

	buf  []byte // buf[r:w] is read and not yet parsed
	r, w int

	// The array command at buf[r:] being parsed: inCmd, then its declared
	// count, where parsing goes on (an offset from r), the bulk bytes so
	// far and each argument's start and end (offsets from r).
	inCmd bool
	count int
	at    int
	total int
	marks []int
	// need is an offset from r that the bytes read must reach before
	// parsing can go on (the end of a bulk string); 0 when not known.
	need int
	// scanned is how far from r an inline line is known to hold no LF.
	scanned int

	args   [][]byte // the last command's arguments (reused)
	inline []byte   // an inline command's unescaped words (reused)
}

func newRespReader(maxBulk, maxCommand int) *respReader {
	return &respReader{maxBulk: maxBulk, maxCommand: maxCommand, buf: make([]byte, readBufSize)}
}

// buffered reports whether bytes are read and not yet returned as commands.
func (rd *respReader) buffered() bool { return rd.r < rd.w }

// next returns the next complete command's arguments (at least one), or
// nil, nil when the bytes read so far end before one. The arguments are
// valid until the next call of next or fill. Requests Redis ignores are
// skipped: an array whose count is 0 or negative, an empty inline line.
func (rd *respReader) next() ([][]byte, error) {
	for {
		if !rd.inCmd {
			if rd.r == rd.w {
				return nil, nil
			}
			b := rd.buf[rd.r:rd.w]
			if b[0] != '*' {
				args, used, err := rd.parseInline(b)
				if err != nil || used == 0 {
					return nil, err
				}
				rd.r += used
				if len(args) == 0 {
					continue
				}
				return args, nil
			}
			count, n, err := lengthLine(b[1:], errMultibulkLen)
			if err != nil || n == 0 {
				return nil, err
			}
			if count <= 0 {
				rd.r += 1 + n // "*0", "*-1": ignored, as Redis does
				continue
			}
			if count > maxArgs {
				return nil, errMultibulkLen
			}
			rd.inCmd, rd.count, rd.at, rd.total, rd.marks = true, int(count), 1+n, 0, rd.marks[:0]
		}
		b := rd.buf[rd.r:rd.w]
		for len(rd.marks) < 2*rd.count {
			i := rd.at
			if i >= len(b) {
				return nil, nil
			}
			if b[i] != '$' {
				return nil, protocolError(fmt.Sprintf("expected '$', got '%c'", b[i]))
			}
			size, n, err := lengthLine(b[i+1:], errBulkLen)
			if err != nil || n == 0 {
				return nil, err
			}
			if size < 0 || size > int64(rd.maxBulk) {
				return nil, errBulkLen
			}
			if rd.total+int(size) > rd.maxCommand {
				return nil, protocolError(fmt.Sprintf("command too big (commands are limited to %d bytes)", rd.maxCommand))
			}
			start := i + 1 + n
			end := start + int(size)
			if end+2 > len(b) {
				rd.need = end + 2
				return nil, nil
			}
			if b[end] != '\r' || b[end+1] != '\n' {
				return nil, errBulkLen
			}
			rd.total += int(size)
			rd.marks = append(rd.marks, start, end)
			rd.at = end + 2
		}
		args := rd.args[:0]
		for k := 0; k < len(rd.marks); k += 2 {
			// The capacity ends with the argument: a handler that appends
			// to one gets a copy instead of overwriting the next.
			args = append(args, b[rd.marks[k]:rd.marks[k+1]:rd.marks[k+1]])
		}
		rd.args = args
		rd.r += rd.at
		rd.inCmd, rd.need = false, 0
		return args, nil
	}
}

// lengthLine parses the number of a "*count" or "$length" line, b being
// the line after its first byte: an optional minus and digits, then CRLF.
// It returns the number and the bytes of b it takes, or n 0 when b ends
// before the line does; a line that cannot be a number is errBad.
func lengthLine(b []byte, errBad protocolError) (v int64, n int, err error) {
	end := -1
	for i := 0; i < len(b) && i < maxLengthLine; i++ {
		if b[i] == '\n' {
			end = i
			break
		}
	}
	if end < 0 {
		if len(b) >= maxLengthLine {
			return 0, 0, errBad
		}
		return 0, 0, nil
	}
	if end == 0 || b[end-1] != '\r' {
		return 0, 0, errBad
	}
	digits := b[:end-1]
	neg := len(digits) > 0 && digits[0] == '-'
	if neg {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 { // 18 digits cannot overflow an int64
		return 0, 0, errBad
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, 0, errBad
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, end + 1, nil
}

// parseInline splits the inline command that b starts with into words,
// as Redis's sdssplitargs does: words separated by spaces or tabs; a word
// may be in double quotes, with \n \r \t \b \a \xHH and \<any> escapes,
// or in single quotes, with \' only; a closing quote must end the word.
// It returns used 0 when b ends before the line does.
func (rd *respReader) parseInline(b []byte) (args [][]byte, used int, err error) {
	end := bytes.IndexByte(b[rd.scanned:], '\n')
	if end < 0 {
		if len(b) > maxInline {
			return nil, 0, errInlineTooBig
		}
		// Not searched again when more arrives: a line sent a byte at a
		// time would otherwise cost a search of the whole line per byte.
		rd.scanned = len(b)
		return nil, 0, nil
	}
	end += rd.scanned
	rd.scanned = 0
	if end > maxInline {
		return nil, 0, errInlineTooBig
	}
	line := b[:end]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	// The words are copied (unescaped) into one buffer; their bounds are
	// kept as offsets while it grows, and sliced at the end.
	words := rd.inline[:0]
	marks := rd.marks[:0]
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		start := len(words)
		var quote byte // the quote the word is in, or 0
		for done := false; !done; i++ {
			if i == len(line) {
				if quote != 0 {
					return nil, 0, errUnbalanced
				}
				break
			}
			c := line[i]
			switch {
			case quote == '"' && c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
				words = append(words, unhex(line[i+2])<<4|unhex(line[i+3]))
				i += 3
			case quote == '"' && c == '\\' && i+1 < len(line):
				i++
				switch c = line[i]; c {
				case 'n':
					c = '\n'
				case 'r':
					c = '\r'
				case 't':
					c = '\t'
				case 'b':
					c = '\b'
				case 'a':
					c = '\a'
				}
				words = append(words, c)
			case quote == '\'' && c == '\\' && i+1 < len(line) && line[i+1] == '\'':
				words = append(words, '\'')
				i++
			case quote != 0 && c == quote:
				if i+1 < len(line) && !isSpace(line[i+1]) {
					return nil, 0, errUnbalanced
				}
				done = true
			case quote != 0:
				words = append(words, c)
			case isSpace(c):
				done = true
			case c == '"' || c == '\'':
				quote = c
			default:
				words = append(words, c)
			}
		}
		marks = append(marks, start, len(words))
	}
	args = rd.args[:0]
	for k := 0; k < len(marks); k += 2 {
		args = append(args, words[marks[k]:marks[k+1]:marks[k+1]])
	}
	rd.inline, rd.marks, rd.args = words, marks, args
	return args, end + 1, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// fill reads more of the stream. Bytes already returned as commands are
// dropped first (the arguments handed out before are then invalid); the
// buffer grows to hold the command being parsed, as far as its headers
// say it reaches, and shrinks back once it is empty.
func (rd *respReader) fill(src io.Reader) error {
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
		if len(rd.buf) > readBufSize {
			rd.buf = make([]byte, readBufSize)
		}
		if cap(rd.args) > 1024 { // after a command of many arguments
			rd.args, rd.marks = nil, nil
		}
	}
	// The buffer doubles, up to what the command's headers announce:
	// growing by what a client declares rather than what it sends would
	// let a header of "$16000000" and nothing more hold 16 MB per
	// connection.
	used := rd.w - rd.r
	want := max(used+readMin, min(rd.need, 2*len(rd.buf)))
	switch {
	case want > len(rd.buf):
		nb := make([]byte, max(want, 2*len(rd.buf)))
		rd.w = copy(nb, rd.buf[rd.r:rd.w])
		rd.buf, rd.r = nb, 0
	case rd.r+want > len(rd.buf):
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	n, err := src.Read(rd.buf[rd.w:])
	rd.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}
