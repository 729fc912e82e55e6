package lmdb

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

func requestKey(at time.Time, seq uint32) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, requestKeyLen), uint64(unixNano(at)))
	return binary.BigEndian.AppendUint32(k, seq)
}

func requestKeyTime(k []byte) time.Time {
	return fromUnixNano(int64(binary.BigEndian.Uint64(k)))
}

// AppendRequests adds entries to the request log in one write and trims it
// to b: the entries older than b.Age, then the oldest past b.Size.
func (s *Store) AppendRequests(ctx context.Context, entries []dedupe.LoggedRequest, b dedupe.RequestLogBounds) error {
	keys := make([][]byte, len(entries))
	values := make([][]byte, len(entries))
	for i, e := range entries {
		e.ID = ""
		v, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("dedupe: request log: %w", err)
		}
		keys[i], values[i] = requestKey(e.Time, s.requestSeq.Add(1)), v
	}
	return s.update(ctx, func(txn *mdb.Txn) error {
		for i := range keys {
			if err := s.putKV(txn, s.requests, keys[i], values[i]); err != nil {
				return err
			}
		}
		return s.trimRequests(txn, b)
	})
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
