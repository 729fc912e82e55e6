package dedupe

import (
	"encoding/binary"
	"fmt"
	"time"
)

// State is where a key is in its life.
type State uint8

// The states of a record. The zero State matches any state in filters.
const (
	InFlight  State = 1
	Completed State = 2
	Failed    State = 3
)

// String returns the state's name as operators see it.
func (s State) String() string {
	switch s {
	case InFlight:
		return "IN_FLIGHT"
	case Completed:
		return "COMPLETED"
	case Failed:
		return "FAILED"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// ParseState parses a state name as printed by String (case-sensitive).
func ParseState(s string) (State, error) {
	for _, st := range []State{InFlight, Completed, Failed} {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("dedupe: unknown state %q (want IN_FLIGHT, COMPLETED or FAILED)", s)
}

// MaxStoredBody caps the downstream answer body kept with a COMPLETED or
// FAILED record; a longer body is cut, and replays return the cut body. The
// dispatcher reads no more than this, so first answer and replays agree.
const MaxStoredBody = 64 << 10

// Response is the downstream answer recorded with a finished event.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

// Record is the stored state of one key.
type Record struct {
	Key         string
	State       State
	Token       uint64    // owner of the current lease (IN_FLIGHT only)
	LeaseUntil  time.Time // IN_FLIGHT only
	Attempts    uint32    // claims so far, takeovers included
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ExpiresAt   time.Time // when the pruner may delete the record
	Fingerprint string
	Response    Response // COMPLETED and FAILED only
}

// Lease is what a successful Claim hands to its caller: the right to finish
// the key until Until.
type Lease struct {
	Key   string
	Token uint64
	Until time.Time
}

const recordVersion = 1

// encode appends the binary form of r (without its key, which is the LMDB
// key) to dst. Layout v1: version, state, token, lease, created, updated,
// expires (unix nanoseconds), attempts, status, then length-prefixed
// fingerprint, content type and body.
func (r *Record) encode(dst []byte) []byte {
	dst = append(dst, recordVersion, byte(r.State))
	dst = binary.BigEndian.AppendUint64(dst, r.Token)
	for _, t := range []time.Time{r.LeaseUntil, r.CreatedAt, r.UpdatedAt, r.ExpiresAt} {
		dst = binary.BigEndian.AppendUint64(dst, uint64(unixNano(t)))
	}
	dst = binary.BigEndian.AppendUint32(dst, r.Attempts)
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.Response.Status))
	for _, b := range [][]byte{[]byte(r.Fingerprint), []byte(r.Response.ContentType), r.Response.Body} {
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	return dst
}

// decodeRecord parses a value written by encode. It copies what it keeps, so
// the result outlives the LMDB transaction that produced buf.
func decodeRecord(key string, buf []byte) (Record, error) {
	const fixed = 2 + 8 + 4*8 + 4 + 2
	if len(buf) < fixed || buf[0] != recordVersion {
		return Record{}, fmt.Errorf("%w: key %q", ErrCorrupt, key)
	}
	r := Record{Key: key, State: State(buf[1])}
	p := buf[2:]
	r.Token = binary.BigEndian.Uint64(p)
	p = p[8:]
	times := []*time.Time{&r.LeaseUntil, &r.CreatedAt, &r.UpdatedAt, &r.ExpiresAt}
	for _, t := range times {
		*t = fromUnixNano(int64(binary.BigEndian.Uint64(p)))
		p = p[8:]
	}
	r.Attempts = binary.BigEndian.Uint32(p)
	p = p[4:]
	r.Response.Status = int(binary.BigEndian.Uint16(p))
	p = p[2:]
	var fields [3][]byte
	for i := range fields {
		n, w := binary.Uvarint(p)
		if w <= 0 || uint64(len(p)-w) < n {
			return Record{}, fmt.Errorf("%w: key %q", ErrCorrupt, key)
		}
		fields[i] = p[w : w+int(n)]
		p = p[w+int(n):]
	}
	if len(p) != 0 {
		// encode writes nothing after the body: a length that says less
		// than was written is damage, not a shorter field.
		return Record{}, fmt.Errorf("%w: key %q: %d bytes after the last field", ErrCorrupt, key, len(p))
	}
	r.Fingerprint = string(fields[0])
	r.Response.ContentType = string(fields[1])
	if len(fields[2]) > 0 {
		r.Response.Body = append([]byte(nil), fields[2]...)
	}
	return r, nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
