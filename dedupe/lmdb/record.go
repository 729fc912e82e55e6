package lmdb

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

const recordVersion = 1

// encodeRecord appends the binary form of r (without its key, which is the LMDB
// key) to dst. Layout v1: version, state, token, lease, created, updated,
// expires (unix nanoseconds), attempts, status, then length-prefixed
// fingerprint, content type and body.
func encodeRecord(dst []byte, r *dedupe.Record) []byte {
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

// decodeRecord parses a value written by encodeRecord. It copies what it keeps, so
// the result outlives the LMDB transaction that produced buf.
func decodeRecord(key string, buf []byte) (dedupe.Record, error) {
	const fixed = 2 + 8 + 4*8 + 4 + 2
	if len(buf) < fixed || buf[0] != recordVersion {
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
	for i := range fields {
		n, w := binary.Uvarint(p)
		if w <= 0 || uint64(len(p)-w) < n {
			return dedupe.Record{}, fmt.Errorf("%w: key %q", dedupe.ErrCorrupt, key)
		}
		fields[i] = p[w : w+int(n)]
		p = p[w+int(n):]
	}
	if len(p) != 0 {
		// encodeRecord writes nothing after the body: a length that says less
		// than was written is damage, not a shorter field.
		return dedupe.Record{}, fmt.Errorf("%w: key %q: %d bytes after the last field", dedupe.ErrCorrupt, key, len(p))
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
