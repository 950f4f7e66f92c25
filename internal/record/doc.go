// Package record implements the record framing that bloomkv's write-ahead
// logs (package wal) and its MANIFEST (internal/manifest) share: a file is a
// sequence of opaque byte records, each framed with a checksum so that a
// reader can tell a crash's torn tail from real damage. What a record means
// is up to the caller.
//
// # File layout
//
// A log is a sequence of blocks of BlockSize (32768) bytes; the last block
// may be shorter. A record is written as one or more fragments. A fragment
// never crosses a block boundary. All integers are little-endian
// (encoding/binary). These wire constants never change.
//
//	block    := fragment* padding?
//	fragment := header payload
//
//	header (7 bytes):
//	+--------+--------+-------------------------------------------------+
//	| offset | size   | field                                           |
//	+--------+--------+-------------------------------------------------+
//	| 0      | 4      | checksum: uint32, masked CRC32C of type+payload |
//	| 4      | 2      | length: uint16, payload bytes that follow       |
//	| 6      | 1      | type: 1 full, 2 first, 3 middle, 4 last         |
//	+--------+--------+-------------------------------------------------+
//	| 7      | length | payload                                         |
//	+--------+--------+-------------------------------------------------+
//
// The checksum is CRC32C (Castagnoli polynomial) computed over the type byte
// followed by the payload, then masked:
//
//	masked = rotate_right_32(crc, 15) + 0x3c6ef372   (mod 2^32)
//
// The length is not covered directly: a wrong length moves the payload
// window, and the checksum over the wrong window fails.
//
// Type 0 is reserved and never written, so zero-filled space never parses
// as a fragment. A record that fits in the rest of the current block is one
// full fragment. Otherwise it is a first fragment that fills the rest of the
// block, middle fragments that each fill a whole block, and a last fragment
// that starts a block. So assembling a split record needs every fragment: a
// first without its last is never a record. An empty record is a full
// fragment with length 0.
//
// When fewer than 7 bytes are left in a block, the writer fills them with
// zeros (padding) and starts the next fragment at the next block boundary.
// A fragment may have an empty payload (a first fragment when exactly 7 bytes
// are left).
//
// The writer hands each record's bytes (padding included) to the file before
// AddRecord returns, in one write for records up to 1 MiB. Files are fresh
// logs, never recycled, so no file number is mixed into the checksum.
//
// # Worked example
//
// AddRecord("bloom") then AddRecord("") on a fresh file write 19 bytes:
//
//	offset 0:  d1 80 30 fb  05 00  01  62 6c 6f 6f 6d    full, "bloom"
//	offset 12: 9f 33 14 dd  00 00  01                    full, ""
//
// A 40000-byte record written at offset 0 is a first fragment at offset 0
// with length 32761 (filling block 0) and a last fragment at offset 32768
// with length 7239. TestGoldenBytes pins both.
//
// # Reading: what the reader accepts
//
// A fragment is accepted when its header is complete, its type is 1..4, its
// payload lies inside both its block and the file, its checksum matches, and
// it fits the writer's layout: first and middle fragments end exactly at a
// block boundary, middle and last fragments start one, a middle or last
// follows a first or middle, and a full or first never interrupts a record
// that has not seen its last fragment. Padding must be zeros.
//
// # Torn tail or corruption
//
// A crash (kill -9, or a power loss with unsynced data) can leave a partial
// last record, or garbage or zeros after the last whole record. That is a
// torn tail: the reader drops it silently, keeps every whole record before
// it, returns io.EOF and reports the drop through TornTail. Damage anywhere
// else is corruption.
//
// The rule: when the reader stops at a fragment it cannot accept, at offset
// X, it searches the rest of the file, at every byte offset from X on, for
// an intact fragment (known type, payload inside its block and the file,
// checksum matching). If there is one, the log goes on past the damage, so
// the damage is corruption at X: Next returns a *CorruptionError (wrapping
// base.ErrCorruption) that names the file and X. Otherwise everything after
// the last whole record (padding included) is a torn tail, and TornTail
// reports the offset where that record ends.
//
// Consequences: a truncated log always reads as a prefix of its records; a
// damaged byte anywhere before the last record is corruption, since the
// last record is intact; damage inside the last record (or in a record that
// runs to the end of the file) cannot be told from a crash and drops just
// that record. A log that ends inside block padding is torn, since the
// writer writes padding together with the fragment after it. A record whose
// payload itself embeds intact fragments (a log stored as a value) can make
// a torn tail look like corruption: the reader errs on the side of an error.
//
// # Reserved space
//
// A log written through a memory map is made longer than its records
// ahead of them (the writer reserves space, zero-filled, and cuts the file
// back when it seals the log), so a crash leaves the newest log ending in
// zeros that were never written. A reader told so (AllowReservedTail)
// reads zeros from the end of the last whole record to the end of the file
// as a clean end, strict or not, and reports them through Reserved, not
// TornTail. The zeros must start outside a record (after a whole record,
// possibly after its block padding) and run to the end of the file; any
// other byte makes the tail torn or corrupt by the rules above. Zeros after
// the last record cannot tell reserved space from unsynced records that a
// power loss zeroed; those were never promised to survive one.
//
// A strict reader (SetStrict) takes nothing for a torn tail: a log must end
// exactly after its last whole record. Log recovery (package wal) reads
// every log but the newest strictly (older logs were synced before a newer
// one took a write),
// and all of them when asked for absolute consistency.
//
// # Invariants
//
//   - Writer: Size() is the number of bytes handed to the file; after a
//     failed write or sync the Writer fails every later call.
//   - Reader: every record returned is byte-for-byte one that was added, in
//     order, with none missing before it; RecordOffset equals the offset
//     AddRecord returned for it.
//   - Neither type is safe for concurrent use.
package record
