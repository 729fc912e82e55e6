package lmdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// The request log lives in its own DBI, dbiRequests: key requestKeyLen
// bytes (8-byte big-endian unix nanoseconds of the request's arrival, then
// a 4-byte sequence number, so two requests of one nanosecond stay two),
// value the entry as JSON without its ID (the key is the ID). An append is
// one op of the writer, so a batch of entries rides in whatever group
// commit is under way, or makes one of its own when the node is idle: never
// a sync per request.

// requestKeyLen is the length of a dbiRequests key.
const requestKeyLen = 12

// appendRequestKey appends the dbiRequests key of a request that arrived
// at at, numbered seq.
func appendRequestKey(dst []byte, at time.Time, seq uint32) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixNano(at)))
	return binary.BigEndian.AppendUint32(dst, seq)
}

func requestKeyTime(k []byte) time.Time {
	return fromUnixNano(int64(binary.BigEndian.Uint64(k)))
}

// AppendRequests adds entries to the request log in one write and trims it
// to b: the entries older than b.Age, then the oldest past b.Size.
func (s *Store) AppendRequests(ctx context.Context, entries []dedupe.LoggedRequest, b dedupe.RequestLogBounds) error {
	// The keys and values of the batch share two buffers: one allocation
	// each, not two per entry.
	type kv struct{ k, v []byte }
	kvs := make([]kv, len(entries))
	keys := make([]byte, 0, len(entries)*requestKeyLen)
	values := make([]byte, 0, len(entries)*requestValueLen)
	ends := make([]int, len(entries))
	for i, e := range entries {
		e.ID = ""
		var err error
		if values, err = appendRequest(values, e); err != nil {
			return fmt.Errorf("dedupe: request log: %w", err)
		}
		ends[i] = len(values)
		keys = appendRequestKey(keys, e.Time, s.requestSeq.Add(1))
	}
	for i, start := 0, 0; i < len(kvs); i++ {
		k := keys[i*requestKeyLen : (i+1)*requestKeyLen]
		kvs[i] = kv{k, values[start:ends[i]]}
		start = ends[i]
	}
	// Requests end in about the order they arrived, and a key is its
	// arrival: sorted, the batch is nearly always after every key already
	// in the log, where LMDB appends without a search and fills each page
	// before it starts the next (a put in the middle of a page splits it in
	// two half-full ones).
	slices.SortFunc(kvs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	return s.update(ctx, func(txn *mdb.Txn) error {
		cur, err := txn.OpenCursor(s.requests)
		if err != nil {
			return err
		}
		defer cur.Close()
		for _, e := range kvs {
			if err := s.appendCur(cur, e.k, e.v); err != nil {
				return err
			}
		}
		return s.trimRequests(txn, b)
	})
}

// requestValueLen is about the length of a request log value: room for a
// batch's values at once.
const requestValueLen = 256

// appendRequest appends e as json.Marshal writes it (TestAppendRequest,
// FuzzAppendRequest): the request log's value. Marshal's reflection was
// most of what an append cost the flusher; an entry it would write
// differently (an escape in a string, a time Marshal refuses) is left to
// it.
func appendRequest(dst []byte, e dedupe.LoggedRequest) ([]byte, error) {
	if !plainRequest(e) {
		v, err := json.Marshal(e)
		return append(dst, v...), err
	}
	dst = append(dst, `{"id":`...)
	dst = appendPlain(dst, e.ID)
	dst = append(dst, `,"time":"`...)
	dst = e.Time.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","source":`...)
	dst = appendPlain(dst, e.Source)
	dst = append(dst, `,"provider":`...)
	dst = appendPlain(dst, e.Provider)
	dst = append(dst, `,"outcome":`...)
	dst = appendPlain(dst, e.Outcome)
	dst = append(dst, `,"reason":`...)
	dst = appendPlain(dst, e.Reason)
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(e.Status), 10)
	dst = append(dst, `,"size":`...)
	dst = strconv.AppendInt(dst, e.Size, 10)
	dst = append(dst, `,"remote_addr":`...)
	dst = appendPlain(dst, e.RemoteAddr)
	if e.EventKey != "" {
		dst = append(dst, `,"event_key":`...)
		dst = appendPlain(dst, e.EventKey)
	}
	if e.Type != "" {
		dst = append(dst, `,"type":`...)
		dst = appendPlain(dst, e.Type)
	}
	return append(dst, '}'), nil
}

// plainRequest reports whether appendRequest may write e itself: every
// string is written by Marshal as it is, and the time is one Marshal
// writes (a four-digit year, a zone offset under a day).
func plainRequest(e dedupe.LoggedRequest) bool {
	if y := e.Time.Year(); y < 0 || y > 9999 {
		return false
	}
	if _, off := e.Time.Zone(); off <= -24*60*60 || off >= 24*60*60 {
		return false
	}
	for _, s := range [...]string{e.ID, e.Source, e.Provider, e.Outcome, e.Reason, e.RemoteAddr, e.EventKey, e.Type} {
		if !isPlainString(s) {
			return false
		}
	}
	return true
}

// isPlainString reports whether Marshal writes s between quotes as it is:
// printable ASCII without a quote, a backslash, or the '<', '>' and '&'
// that it escapes for HTML.
func isPlainString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < ' ' || c > '~', c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// appendPlain appends s, for which isPlainString holds, quoted.
func appendPlain(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// trimRequests deletes from the oldest end of the log what b does not keep.
func (s *Store) trimRequests(txn *mdb.Txn, b dedupe.RequestLogBounds) error {
	st, err := txn.Stat(s.requests)
	if err != nil {
		return err
	}
	over := int64(st.Entries) - int64(b.Size)
	if b.Size <= 0 {
		over = 0
	}
	var oldest time.Time
	if b.Age > 0 {
		oldest = s.opts.Now().Add(-b.Age)
	}
	cur, err := txn.OpenCursor(s.requests)
	if err != nil {
		return err
	}
	defer cur.Close()
	// The key is only looked at before its entry is deleted: no copy of
	// it, nor of the value, for every entry trimmed.
	raw := txn.RawRead
	txn.RawRead = true
	defer func() { txn.RawRead = raw }() // also after a panic: the writer's transaction goes on
	for {
		k, _, err := cur.Get(nil, nil, mdb.First)
		if mdb.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if over <= 0 && (len(k) != requestKeyLen || !requestKeyTime(k).Before(oldest)) {
			return nil
		}
		if err := s.delCur(cur); err != nil {
			return err
		}
		over--
	}
}

// ListRequests returns the entries f selects, newest first: a walk
// backwards from f.After (or the end), decoding each entry it passes.
func (s *Store) ListRequests(ctx context.Context, f dedupe.RequestFilter) ([]dedupe.LoggedRequest, string, error) {
	var after []byte
	if f.After != "" {
		k, err := hex.DecodeString(f.After)
		if err != nil || len(k) != requestKeyLen {
			return nil, "", fmt.Errorf("%w: request log cursor", dedupe.ErrInvalidCursor)
		}
		after = k
	}
	limit := f.PageLimit()
	var out []dedupe.LoggedRequest
	next := ""
	err := s.view(func(txn *mdb.Txn) error {
		out, next = out[:0], ""
		cur, err := txn.OpenCursor(s.requests)
		if err != nil {
			return err
		}
		defer cur.Close()
		var k, v []byte
		if after == nil {
			k, v, err = cur.Get(nil, nil, mdb.Last)
		} else {
			k, v, err = cur.Get(after, nil, mdb.SetRange)
			switch {
			case mdb.IsNotFound(err):
				k, v, err = cur.Get(nil, nil, mdb.Last)
			case err == nil:
				k, v, err = cur.Get(nil, nil, mdb.Prev)
			}
		}
		for n := 0; err == nil; k, v, err = cur.Get(nil, nil, mdb.Prev) {
			if n++; n%4096 == 0 {
				if cerr := ctx.Err(); cerr != nil {
					return cerr
				}
			}
			var e dedupe.LoggedRequest
			if json.Unmarshal(v, &e) != nil || !f.Match(e) {
				continue // an unreadable entry is passed over, not fatal
			}
			if len(out) == limit {
				next = out[len(out)-1].ID
				return nil
			}
			e.ID = hex.EncodeToString(k)
			out = append(out, e)
		}
		if mdb.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}
