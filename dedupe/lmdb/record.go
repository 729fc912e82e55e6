package lmdb

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

// recordVersion is the layout encodeRecord writes; decodeRecord reads it,
// recordVersion3 (every request body inline), recordVersion2 (before the
// queue's fields) and recordVersion1 (before stored requests), so a store
// written by an older webhookd opens as it is, and its records are
// rewritten in their own layout by every transition: no pass over the
// store converts them. An older webhookd cannot read a newer record: it
// answers it as corrupt.
const (
	recordVersion  = 4
	recordVersion3 = 3
	recordVersion2 = 2
	recordVersion1 = 1
)

// The request byte of a record: none, a request with its body inline
// (every request before v4, and a v4 one whose body is not kept), or a
// request whose whole body lives in dbiBodies under the record's key (v4).
const (
	reqNone   = 0
	reqInline = 1
	reqApart  = 2
)

// encodeRecord appends the binary form of r (without its key, which is the LMDB
// key) to dst. Layout v2: version, state, token, lease, created, updated,
// expires (unix nanoseconds), attempts, status, then length-prefixed
// fingerprint, content type and body (v1 ends here), then the request: a
// byte saying whether there is one, and if so its uvarint size and
// length-prefixed content type, event type and body (v2 ends here), then
// the queue's fields (v3): length-prefixed destination, QueuedAt and
// NextAttempt (unix nanoseconds), retries, length-prefixed reason. v4
// adds the request byte reqApart (apart set), after which the
// request's body field is left out: the body is written once, when the
// record is created (create), and the transitions that rewrite the record
// leave it where it is (BENCHMARKS.md, "records without their request
// body").
func encodeRecord(dst []byte, r *dedupe.Record, apart bool) []byte {
	dst = encodeV2(dst, r, apart)
	dst = binary.AppendUvarint(dst, uint64(len(r.Destination)))
	dst = append(dst, r.Destination...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixNano(r.QueuedAt)))
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixNano(r.NextAttempt)))
	dst = binary.BigEndian.AppendUint32(dst, r.Retries)
	dst = binary.AppendUvarint(dst, uint64(len(r.Reason)))
	return append(dst, r.Reason...)
}

// encodeV2 appends every field up to the stored request (the v2 layout,
// with the current version byte), the request's body apart when apart is
// set.
func encodeV2(dst []byte, r *dedupe.Record, apart bool) []byte {
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
		return append(dst, reqNone)
	}
	if apart {
		dst = append(dst, reqApart)
	} else {
		dst = append(dst, reqInline)
	}
	dst = binary.AppendUvarint(dst, uint64(r.Request.Size))
	for _, b := range [][]byte{[]byte(r.Request.ContentType), []byte(r.Request.EventType)} {
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	if apart {
		return dst
	}
	// A request read without its body (Unread) is written as one whose
	// body was not kept: only a body in hand can be written.
	dst = binary.AppendUvarint(dst, uint64(len(r.Request.Body)))
	return append(dst, r.Request.Body...)
}

// apartBody reports whether create writes req's body into dbiBodies: a
// whole body in hand, not empty. A body not kept, or one read without
// being copied (Unread, a copy from another store), stays inline, as the
// request's size only.
func apartBody(req *dedupe.Request) bool {
	return req != nil && req.Size > 0 && len(req.Body) == req.Size
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
// inlineRequest copies a request body only when the record holds it
// inline: what a transition needs to rewrite an older record in its own
// layout, without reading a body kept in dbiBodies, which it leaves there.
type bodies uint8

const (
	responseBody bodies = 1 << iota
	requestBody
	inlineRequest
	noBodies  bodies = 0
	allBodies        = responseBody | requestBody
	// rewriteBodies is what a transition reads of the record it rewrites.
	rewriteBodies = responseBody | inlineRequest
)

// decodeRecord parses a value written by encodeRecord, copying the bodies
// want asks for. It checks every length all the same, so a damaged record
// is refused whatever is read of it. A request body left out is marked
// Unread (when it is stored whole) and its Body is nil; so is one that
// lives in dbiBodies, which decodeRecord does not read (get does). It
// copies what it keeps, so the result outlives the LMDB transaction that
// produced buf.
func decodeRecord(key string, buf []byte, want bodies) (dedupe.Record, error) {
	r, _, err := decodeStored(key, buf, want)
	return r, err
}

// decodeStored is decodeRecord that also reports whether the record's
// request body lives in dbiBodies (apart).
func decodeStored(key string, buf []byte, want bodies) (_ dedupe.Record, apart bool, _ error) {
	const fixed = 2 + 8 + 4*8 + 4 + 2
	if len(buf) < fixed || buf[0] < recordVersion1 || buf[0] > recordVersion {
		return dedupe.Record{}, false, fmt.Errorf("%w: key %q", dedupe.ErrCorrupt, key)
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
		return dedupe.Record{}, false, fmt.Errorf("%w: key %q", dedupe.ErrCorrupt, key)
	}
	if buf[0] >= recordVersion2 {
		withBody := want&(requestBody|inlineRequest) != 0
		if p, apart, ok = decodeRequest(p, &r, withBody, buf[0] >= recordVersion); !ok {
			return dedupe.Record{}, false, fmt.Errorf("%w: key %q: request", dedupe.ErrCorrupt, key)
		}
	}
	if buf[0] >= recordVersion3 {
		if p, ok = decodeQueue(p, &r); !ok {
			return dedupe.Record{}, false, fmt.Errorf("%w: key %q: queue fields", dedupe.ErrCorrupt, key)
		}
	}
	if len(p) != 0 {
		// encodeRecord writes nothing after the last field: a length that
		// says less than was written is damage, not a shorter field.
		return dedupe.Record{}, false, fmt.Errorf("%w: key %q: %d bytes after the last field", dedupe.ErrCorrupt, key, len(p))
	}
	r.Fingerprint = string(fields[0])
	r.Response.ContentType = string(fields[1])
	if len(fields[2]) > 0 && want&responseBody != 0 {
		r.Response.Body = append([]byte(nil), fields[2]...)
	}
	return r, apart, nil
}

// decodeRequest reads the request part of a v2 record into r, copying
// what it keeps: an inline body only when withBody is set. A body apart
// (v4 only) is left for get to read: the request says Unread.
func decodeRequest(p []byte, r *dedupe.Record, withBody, v4 bool) (_ []byte, apart, ok bool) {
	if len(p) == 0 || p[0] > reqApart || p[0] == reqApart && !v4 {
		return nil, false, false
	}
	if p[0] == reqNone {
		return p[1:], false, true
	}
	apart = p[0] == reqApart
	size, w := binary.Uvarint(p[1:])
	if w <= 0 || size > 1<<31 || apart && size == 0 {
		return nil, false, false
	}
	n := 3
	if apart {
		n = 2
	}
	var f [3][]byte
	p, ok = lengthPrefixed(p[1+w:], f[:n])
	if !ok {
		return nil, false, false
	}
	r.Request = &dedupe.Request{ContentType: string(f[0]), EventType: string(f[1]), Size: int(size)}
	switch {
	case apart || !withBody:
		r.Request.Unread = apart || uint64(len(f[2])) == size
	case len(f[2]) > 0 || size == 0:
		r.Request.Body = append([]byte{}, f[2]...)
	}
	return p, apart, true
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
