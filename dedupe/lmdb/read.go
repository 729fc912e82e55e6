package lmdb

import (
	"context"
	"fmt"
	"strings"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// Get returns the record of key, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (dedupe.Record, error) {
	return s.read1(key, allBodies)
}

// Peek returns the record of key as Get does, but without its request body
// (Request.Unread): what a duplicate is answered with, read without
// copying up to dedupe.MaxStoredRequest bytes it would not send.
func (s *Store) Peek(ctx context.Context, key string) (dedupe.Record, error) {
	return s.read1(key, responseBody)
}

func (s *Store) read1(key string, want bodies) (dedupe.Record, error) {
	if err := dedupe.CheckKey(key); err != nil {
		return dedupe.Record{}, err
	}
	var rec dedupe.Record
	err := s.view(func(txn *mdb.Txn) error {
		var err error
		rec, err = s.get(txn, key, want)
		return err
	})
	return rec, err
}

// List returns records in key order.
func (s *Store) List(ctx context.Context, o dedupe.ListOptions) ([]dedupe.Record, error) {
	var out []dedupe.Record
	err := s.view(func(txn *mdb.Txn) (err error) {
		// A value LMDB cannot hand over panics in cur.Get, before its key
		// is known: name the record by the last key read.
		last := ""
		defer recoverCorrupt(&err, func() string { return afterKey(last) })
		cur, err := txn.OpenCursor(s.records)
		if err != nil {
			return err
		}
		defer cur.Close()
		txn.RawRead = true // decodeRecord copies what it keeps: no bodies
		start := o.Prefix
		if o.After > start {
			start = o.After
		}
		var k, v []byte
		if start == "" {
			k, v, err = cur.Get(nil, nil, mdb.First)
		} else {
			k, v, err = cur.Get([]byte(start), nil, mdb.SetRange)
		}
		for ; err == nil; k, v, err = cur.Get(nil, nil, mdb.Next) {
			key := string(k)
			last = key
			if key == o.After {
				continue
			}
			if !strings.HasPrefix(key, o.Prefix) {
				break
			}
			rec, derr := decodeRecord(key, v, noBodies)
			if derr != nil {
				return derr
			}
			if o.State != 0 && rec.State != o.State {
				continue
			}
			out = append(out, rec)
			if o.Limit > 0 && len(out) >= o.Limit {
				return ctx.Err()
			}
		}
		if mdb.IsNotFound(err) {
			return nil
		}
		return err
	})
	return out, err
}

// Stats returns the number of records in each state. It reads the counts
// every write keeps beside the records (counts.go), not the records.
func (s *Store) Stats(ctx context.Context) (map[dedupe.State]int, error) {
	var counts map[dedupe.State]int
	err := s.view(func(txn *mdb.Txn) error {
		c, found, err := readCounts(txn, s.meta)
		if err != nil {
			return err
		}
		if !found {
			// Open writes the entry and no write removes it.
			return fmt.Errorf("%w: the record counts are missing", dedupe.ErrCorrupt)
		}
		counts = c.stats()
		return nil
	})
	return counts, err
}

// get reads key's record in txn, copying the bodies want asks for.
func (s *Store) get(txn *mdb.Txn, key string, want bodies) (_ dedupe.Record, err error) {
	defer recoverCorrupt(&err, func() string { return fmt.Sprintf("key %q", key) })
	// The value is read in place, not copied out of the map first:
	// decodeRecord copies what it keeps, and nothing writes in between
	// (a copy would be 199 of the 1,380 bytes the store allocates per
	// webhook, BenchmarkClaimComplete -benchmem), and only the bodies asked
	// for are copied. A length damaged
	// on disk is still caught: beyond what lmdb-go can slice it panics
	// (recoverCorrupt), and within it the record's own field lengths leave
	// bytes over, which decodeRecord refuses, without reading them.
	raw := txn.RawRead
	txn.RawRead = true
	defer func() { txn.RawRead = raw }() // also after a panic: the writer's transaction goes on
	v, err := txn.Get(s.records, []byte(key))
	if mdb.IsNotFound(err) {
		return dedupe.Record{}, dedupe.ErrNotFound
	}
	if err != nil {
		return dedupe.Record{}, err
	}
	return decodeRecord(key, v, want)
}
