package lmdb

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

// recordVersion is the layout encodeRecord writes; decodeRecord reads it,
// recordVersion2 (before the queue's fields) and recordVersion1 (before
// stored requests), so a store written by an older webhookd opens as it
// is. An older webhookd cannot read a newer record: it answers it as
// corrupt.
const (
	recordVersion  = 3
	recordVersion2 = 2
	recordVersion1 = 1
)

// encodeRecord appends the binary form of r (without its key, which is the LMDB
// key) to dst. Layout v2: version, state, token, lease, created, updated,
// expires (unix nanoseconds), attempts, status, then length-prefixed
// fingerprint, content type and body (v1 ends here), then the request: a
// byte saying whether there is one, and if so its uvarint size and
// length-prefixed content type, event type and body (v2 ends here), then
// the queue's fields (v3): length-prefixed destination, QueuedAt and
// NextAttempt (unix nanoseconds), retries, length-prefixed reason.
func encodeRecord(dst []byte, r *dedupe.Record) []byte {
	dst = encodeV2(dst, r)
	dst = binary.AppendUvarint(dst, uint64(len(r.Destination)))
	dst = append(dst, r.Destination...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixNano(r.QueuedAt)))
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixNano(r.NextAttempt)))
	dst = binary.BigEndian.AppendUint32(dst, r.Retries)
	dst = binary.AppendUvarint(dst, uint64(len(r.Reason)))
	return append(dst, r.Reason...)
}

// encodeV2 appends every field up to the stored request (the v2 layout,
// with the current version byte).
func encodeV2(dst []byte, r *dedupe.Record) []byte {
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
	if r.Request == nil {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	dst = binary.AppendUvarint(dst, uint64(r.Request.Size))
	// A request read without its body (Unread) is written as one whose
	// body was not kept: only a body in hand can be written.
	for _, b := range [][]byte{[]byte(r.Request.ContentType), []byte(r.Request.EventType), r.Request.Body} {
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	return dst
}

// lengthPrefixed splits n uvarint-length-prefixed fields off p.
func lengthPrefixed(p []byte, fields [][]byte) ([]byte, bool) {
	for i := range fields {
		n, w := binary.Uvarint(p)
		if w <= 0 || uint64(len(p)-w) < n {
			return nil, false
		}
		fields[i] = p[w : w+int(n)]
		p = p[w+int(n):]
	}
	return p, true
}

// bodies says which stored bodies a read copies out of the map: each can be
// a mebibyte (dedupe.MaxStoredRequest), and most reads answer with neither
// (listings, deletes, the pruner) or with the answer only (a replay).
type bodies uint8

const (
	responseBody bodies = 1 << iota
	requestBody
	noBodies  bodies = 0
	allBodies        = responseBody | requestBody
)

// decodeRecord parses a value written by encodeRecord, copying the bodies
// want asks for. It checks every length all the same, so a damaged record
// is refused whatever is read of it. A request body left out is marked
// Unread (when it is stored whole) and its Body is nil. It copies what it
// keeps, so the result outlives the LMDB transaction that produced buf.
func decodeRecord(key string, buf []byte, want bodies) (dedupe.Record, error) {
	const fixed = 2 + 8 + 4*8 + 4 + 2
	if len(buf) < fixed || buf[0] < recordVersion1 || buf[0] > recordVersion {
		return dedupe.Record{}, fmt.Errorf("%w: key %q", dedupe.ErrCorrupt, key)
	}
	r := dedupe.Record{Key: key, State: dedupe.State(buf[1])}
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
	p, ok := lengthPrefixed(p, fields[:])
	if !ok {
		return dedupe.Record{}, fmt.Errorf("%w: key %q", dedupe.ErrCorrupt, key)
	}
	if buf[0] >= recordVersion2 {
		if p, ok = decodeRequest(p, &r, want&requestBody != 0); !ok {
			return dedupe.Record{}, fmt.Errorf("%w: key %q: request", dedupe.ErrCorrupt, key)
		}
	}
	if buf[0] >= recordVersion {
		if p, ok = decodeQueue(p, &r); !ok {
			return dedupe.Record{}, fmt.Errorf("%w: key %q: queue fields", dedupe.ErrCorrupt, key)
		}
	}
	if len(p) != 0 {
		// encodeRecord writes nothing after the last field: a length that
		// says less than was written is damage, not a shorter field.
		return dedupe.Record{}, fmt.Errorf("%w: key %q: %d bytes after the last field", dedupe.ErrCorrupt, key, len(p))
	}
	r.Fingerprint = string(fields[0])
	r.Response.ContentType = string(fields[1])
	if len(fields[2]) > 0 && want&responseBody != 0 {
		r.Response.Body = append([]byte(nil), fields[2]...)
	}
	return r, nil
}

// decodeRequest reads the request part of a v2 record into r, copying
// what it keeps: the body only when withBody is set.
func decodeRequest(p []byte, r *dedupe.Record, withBody bool) ([]byte, bool) {
	if len(p) == 0 || p[0] > 1 {
		return nil, false
	}
	if p[0] == 0 {
		return p[1:], true
	}
	size, w := binary.Uvarint(p[1:])
	if w <= 0 || size > 1<<31 {
		return nil, false
	}
	var f [3][]byte
	p, ok := lengthPrefixed(p[1+w:], f[:])
	if !ok {
		return nil, false
	}
	r.Request = &dedupe.Request{ContentType: string(f[0]), EventType: string(f[1]), Size: int(size)}
	switch {
	case !withBody:
		r.Request.Unread = uint64(len(f[2])) == size
	case len(f[2]) > 0 || size == 0:
		r.Request.Body = append([]byte{}, f[2]...)
	}
	return p, true
}

// decodeQueue reads the queue's fields of a v3 record into r.
func decodeQueue(p []byte, r *dedupe.Record) ([]byte, bool) {
	var f [1][]byte
	p, ok := lengthPrefixed(p, f[:])
	if !ok || len(p) < 8+8+4 {
		return nil, false
	}
	r.Destination = string(f[0])
	r.QueuedAt = fromUnixNano(int64(binary.BigEndian.Uint64(p)))
	r.NextAttempt = fromUnixNano(int64(binary.BigEndian.Uint64(p[8:])))
	r.Retries = binary.BigEndian.Uint32(p[16:])
	if p, ok = lengthPrefixed(p[20:], f[:]); !ok {
		return nil, false
	}
	r.Reason = string(f[0])
	return p, true
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
