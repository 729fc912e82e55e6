package lmdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// Recent returns records newest first. It walks the creation-time index
// (dbiCreated) backwards from the cursor, filtering on the entries
// themselves (the key's provider, the state byte in the value), and reads a
// record only for an entry it returns: a page costs the index entries it
// passes over, never the whole store. A filter that matches few records
// passes over more entries (keys and one byte each, no copies).
func (s *Store) Recent(ctx context.Context, o dedupe.RecentOptions) ([]dedupe.Record, string, error) {
	from, err := dedupe.DecodeCursor(o.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := o.PageLimit()
	var out []dedupe.Record
	err = s.view(func(txn *mdb.Txn) error {
		out = out[:0]
		cur, err := txn.OpenCursor(s.created)
		if err != nil {
			return err
		}
		defer cur.Close()
		txn.RawRead = true // index keys are copied only when returned
		var k, v []byte
		if o.Cursor == "" {
			k, v, err = cur.Get(nil, nil, mdb.Last)
		} else {
			start := createdKey(nil, from.CreatedAt, from.Key)
			k, v, err = cur.Get(start, nil, mdb.SetRange)
			switch {
			case mdb.IsNotFound(err):
				k, v, err = cur.Get(nil, nil, mdb.Last)
			case err == nil:
				// At the cursor's own entry or the first after it: the
				// page starts before it.
				k, v, err = cur.Get(nil, nil, mdb.Prev)
			}
		}
		var prefix []byte
		if o.Provider != "" {
			prefix = []byte(o.Provider + ":")
		}
		for n := 0; err == nil; k, v, err = cur.Get(nil, nil, mdb.Prev) {
			if n++; n%4096 == 0 {
				if cerr := ctx.Err(); cerr != nil {
					return cerr
				}
			}
			// Filtered on the raw bytes first: an entry passed over costs
			// no allocation.
			if len(k) < 8 || len(v) != 1 || !bytes.HasPrefix(k[8:], prefix) || o.State != 0 && dedupe.State(v[0]) != o.State {
				continue
			}
			at, key, _ := splitExpiryKey(k)
			rec, err := s.get(txn, key, noBodies)
			if errors.Is(err, dedupe.ErrNotFound) {
				continue // an entry of a record deleted without decoding
			}
			if err != nil {
				return err
			}
			if !rec.CreatedAt.Equal(at) || !o.Matches(&rec) {
				continue
			}
			out = append(out, rec)
			if len(out) > limit {
				return nil
			}
		}
		if mdb.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = dedupe.EncodeCursor(&out[limit-1])
	}
	return out, next, nil
}

// openCreated builds the creation-time index of a store written before it
// existed, inside Open's write transaction: once, when the index is empty
// and the store is not. Records that do not decode are left out (Check
// reports them).
func (s *Store) openCreated(txn *mdb.Txn) error {
	ci, err := txn.Stat(s.created)
	if err != nil {
		return err
	}
	ri, err := txn.Stat(s.records)
	if err != nil {
		return err
	}
	if ci.Entries > 0 || ri.Entries == 0 {
		return nil
	}
	start := time.Now()
	cur, err := txn.OpenCursor(s.records)
	if err != nil {
		return err
	}
	defer cur.Close()
	n := 0
	k, v, err := cur.Get(nil, nil, mdb.First)
	for ; err == nil; k, v, err = cur.Get(nil, nil, mdb.Next) {
		rec, derr := decodeRecord(string(k), v, noBodies)
		if derr != nil {
			continue
		}
		if err := s.putKV(txn, s.created, createdKey(nil, rec.CreatedAt, rec.Key), []byte{byte(rec.State)}); err != nil {
			return fmt.Errorf("dedupe: build %s index: %w", dbiCreated, err)
		}
		n++
	}
	if !mdb.IsNotFound(err) {
		return fmt.Errorf("dedupe: build %s index: %w", dbiCreated, err)
	}
	s.logger.Info("dedupe: built the index of records by creation time", "records", n, "took", time.Since(start).String())
	return nil
}
