package lmdb

import (
	"context"
	"fmt"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// put, unindex and del run inside writer ops only, so they may share the
// writer's scratch buffers; LMDB copies keys and values as it writes them.
// put counts rec in its state; unindex uncounts it, since every caller
// unindexes a record to replace or delete it. Both move a QUEUED record's
// queue entries with it (queue.go).
func (s *Store) put(txn *mdb.Txn, rec *dedupe.Record) error {
	if err := s.count(txn, rec.State, 1); err != nil {
		return err
	}
	s.wval = encodeRecord(s.wval[:0], rec)
	s.wkey = append(s.wkey[:0], rec.Key...)
	if err := s.putKV(txn, s.records, s.wkey, s.wval); err != nil {
		return err
	}
	s.wkey = createdKey(s.wkey[:0], rec.CreatedAt, rec.Key)
	if err := s.putKV(txn, s.created, s.wkey, []byte{byte(rec.State)}); err != nil {
		return err
	}
	s.wkey = expiryKey(s.wkey[:0], rec.ExpiresAt, rec.Key)
	if err := s.putKV(txn, s.expiry, s.wkey, nil); err != nil {
		return err
	}
	return s.enqueueIndex(txn, rec)
}

func (s *Store) unindex(txn *mdb.Txn, rec *dedupe.Record) error {
	if err := s.count(txn, rec.State, -1); err != nil {
		return err
	}
	if err := s.uncreate(txn, rec); err != nil {
		return err
	}
	if err := s.unqueue(txn, rec); err != nil {
		return err
	}
	s.wkey = expiryKey(s.wkey[:0], rec.ExpiresAt, rec.Key)
	err := s.delKV(txn, s.expiry, s.wkey)
	if mdb.IsNotFound(err) {
		return nil
	}
	return err
}

// uncreate deletes rec's entry in the creation-time index.
func (s *Store) uncreate(txn *mdb.Txn, rec *dedupe.Record) error {
	s.wkey = createdKey(s.wkey[:0], rec.CreatedAt, rec.Key)
	err := s.delKV(txn, s.created, s.wkey)
	if mdb.IsNotFound(err) {
		return nil
	}
	return err
}

func (s *Store) del(txn *mdb.Txn, rec *dedupe.Record) error {
	if err := s.unindex(txn, rec); err != nil {
		return err
	}
	return s.delKV(txn, s.records, []byte(rec.Key))
}

// putKV, delKV and delCur are the only ways this package writes to LMDB
// (TestEveryWriteIsCounted): each counts the write in s.changes, which
// tells the writer whether an op that failed had changed anything before
// it did (writer.go).
func (s *Store) putKV(txn *mdb.Txn, dbi mdb.DBI, k, v []byte) error {
	s.changes++
	return txn.Put(dbi, k, v, 0)
}

// appendCur puts k and v with cur: with MDB_APPEND, which neither searches
// nor splits a page in the middle, when k sorts after every key of cur's
// DBI, else as putKV would (MDB_APPEND refuses such a key, writing
// nothing).
func (s *Store) appendCur(cur *mdb.Cursor, k, v []byte) error {
	s.changes++
	err := cur.Put(k, v, mdb.Append)
	if mdb.IsErrno(err, mdb.KeyExist) {
		err = cur.Put(k, v, 0)
	}
	return err
}

func (s *Store) delKV(txn *mdb.Txn, dbi mdb.DBI, k []byte) error {
	s.changes++
	return txn.Del(dbi, k, nil)
}

func (s *Store) delCur(cur *mdb.Cursor) error {
	s.changes++
	return cur.Del(0)
}

// view runs fn in a read transaction. A panic inside fn is an unreadable
// record (recoverCorrupt), and the transaction ends as for any error.
func (s *Store) view(fn mdb.TxnOp) error {
	return s.read(func() error { return s.env.View(guardTxn(fn)) })
}

// update runs fn as one op of the writer (writer.go), with the same guard
// as view: a panic in the writer's goroutine would end the process.
func (s *Store) update(ctx context.Context, fn mdb.TxnOp) error {
	return s.write(ctx, guardTxn(fn))
}

// guardTxn makes a panic in fn its error, so that the transaction is
// aborted normally and the caller hears ErrCorrupt.
func guardTxn(fn mdb.TxnOp) mdb.TxnOp {
	return func(txn *mdb.Txn) (err error) {
		defer recoverCorrupt(&err, func() string { return "reading the store" })
		return fn(txn)
	}
}

// recoverCorrupt, deferred, turns a panic into an error wrapping
// ErrCorrupt, what() naming the record. LMDB trusts the lengths it finds on
// its pages (it keeps no checksums), and lmdb-go panics when one is out of
// range as it copies the value ("gobytes: length out of range"): damage on
// disk, to be answered as an error for that key, not a crash.
func recoverCorrupt(err *error, what func() string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %s: %v", dedupe.ErrCorrupt, what(), r)
	}
}

// afterKey names the record that follows key in a cursor walk.
func afterKey(key string) string {
	if key == "" {
		return "the first record"
	}
	return fmt.Sprintf("the record after key %q", key)
}

// read runs fn, which opens one read transaction, holding a reader slot
// and the map (a resize waits for it), and retries it when another process
// has grown the map meanwhile.
func (s *Store) read(fn func() error) error {
	s.readers <- struct{}{}
	defer func() { <-s.readers }()
	for attempt := 0; ; attempt++ {
		err := s.readOnce(fn)
		if isErrno(err, mdb.MapResized) && attempt < 3 {
			if rerr := s.adoptMapSize(); rerr != nil {
				return rerr
			}
			continue
		}
		return err
	}
}

// readOnce runs fn holding s.mu shared. The unlock is deferred: fn may
// panic, and a lock left held would make Close and every resize wait
// forever.
func (s *Store) readOnce(fn func() error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return dedupe.ErrClosed
	}
	return fn()
}
