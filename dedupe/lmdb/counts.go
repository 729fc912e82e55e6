package lmdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// countsKey holds the number of records in each state, in dbiMeta: four
// 8-byte big-endian counts, IN_FLIGHT, COMPLETED, FAILED, QUEUED (an entry
// of three, written before the queue, does not decode and is recounted at
// Open). Every write that
// adds, removes or changes the state of a record updates it in the same
// transaction (put, unindex, recount), so Stats reads three integers
// instead of walking every record.
var countsKey = []byte("counts")

// stateCounts is the decoded counts entry, indexed by State-InFlight.
type stateCounts [dedupe.Queued - dedupe.InFlight + 1]uint64

func isCorrupt(err error) bool { return errors.Is(err, dedupe.ErrCorrupt) }

func validState(st dedupe.State) bool { return st >= dedupe.InFlight && st <= dedupe.Queued }

func (c *stateCounts) encode() []byte { return c.appendTo(make([]byte, 0, 8*len(c))) }

// appendTo appends the counts entry's bytes to b.
func (c *stateCounts) appendTo(b []byte) []byte {
	for _, n := range c {
		b = binary.BigEndian.AppendUint64(b, n)
	}
	return b
}

func decodeCounts(v []byte) (stateCounts, error) {
	var c stateCounts
	if len(v) != 8*len(c) {
		return c, fmt.Errorf("%w: counts entry of %d bytes", dedupe.ErrCorrupt, len(v))
	}
	for i := range c {
		c[i] = binary.BigEndian.Uint64(v[8*i:])
	}
	return c, nil
}

// stats is c as Stats answers it: only the states that have records, as
// the walk that counted them before did.
func (c *stateCounts) stats() map[dedupe.State]int {
	m := map[dedupe.State]int{}
	for i, n := range c {
		if n > 0 {
			m[dedupe.InFlight+dedupe.State(i)] = int(n)
		}
	}
	return m
}

// readCounts returns the counts entry; found is false when there is none.
func readCounts(txn *mdb.Txn, meta mdb.DBI) (c stateCounts, found bool, err error) {
	v, err := getGuarded(txn, meta, countsKey)
	if mdb.IsNotFound(err) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	c, err = decodeCounts(v)
	return c, err == nil, err
}

// count adds delta to the count of st, in the writer's transaction. A
// count never goes below zero: a record whose bytes were damaged after it
// was counted is recounted instead (recount), never guessed at.
//
// Inside a batch (writer.go) the entry is read once, changed in memory by
// every op, and written once before the commit (flushCounts): a complete
// changes two counts, and reading and writing the entry for each change
// cost a fifth of the writer's time in ops. count is a write all the same
// (Store.changes), so that an op that fails after counting is rolled back.
func (s *Store) count(txn *mdb.Txn, st dedupe.State, delta int) error {
	if !validState(st) {
		return nil
	}
	if !s.inBatch {
		c, _, err := readCounts(txn, s.meta)
		if err != nil {
			return err
		}
		c.add(st, delta)
		return s.putKV(txn, s.meta, countsKey, c.appendTo(s.wcounts[:0]))
	}
	s.changes++
	if !s.batch.loaded {
		c, _, err := readCounts(txn, s.meta)
		if err != nil {
			return err
		}
		s.batch = batchCounts{c: c, loaded: true}
	}
	s.batch.c.add(st, delta)
	s.batch.dirty = true
	return nil
}

// batchCounts is the counts entry as the writer's batch has changed it.
type batchCounts struct {
	c      stateCounts
	loaded bool // c was read in this batch's transaction
	dirty  bool // c differs from the entry written in it
}

// add adds delta to the count of st, never below zero.
func (c *stateCounts) add(st dedupe.State, delta int) {
	i := st - dedupe.InFlight
	if delta < 0 && c[i] < uint64(-delta) {
		c[i] = 0
	} else {
		c[i] += uint64(delta)
	}
}

// flushCounts writes the counts a batch changed, before its commit.
func (s *Store) flushCounts(txn *mdb.Txn) error {
	if !s.batch.dirty {
		return nil
	}
	s.batch.dirty = false
	// The writer's scratch buffer holds the entry until LMDB copies it.
	return s.putKV(txn, s.meta, countsKey, s.batch.c.appendTo(s.wcounts[:0]))
}

// recount walks every record and writes the counts entry afresh. Open runs
// it for a store written by a version that kept no counts (or whose counts
// disagree with the number of records), and a write runs it after removing
// or replacing a record that does not decode, which cannot say what it
// was counted as. Both are rare; the walk is in the write transaction, so
// no concurrent write is missed.
func (s *Store) recount(txn *mdb.Txn) error {
	c, err := scanCounts(context.Background(), txn, s.records)
	if err != nil {
		return err
	}
	if s.inBatch {
		s.batch = batchCounts{c: c, loaded: true}
	}
	return s.putKV(txn, s.meta, countsKey, c.encode())
}

// openCounts makes sure the counts entry exists and adds up to the number
// of records, recounting if not, inside Open's write transaction.
func (s *Store) openCounts(txn *mdb.Txn) error {
	c, found, err := readCounts(txn, s.meta)
	if err != nil && !isCorrupt(err) {
		return err
	}
	st, err := txn.Stat(s.records)
	if err != nil {
		return err
	}
	var sum uint64
	for _, n := range c {
		sum += n
	}
	if found && sum == st.Entries {
		return nil
	}
	if err := s.recount(txn); err != nil {
		return fmt.Errorf("dedupe: count records: %w", err)
	}
	if found {
		s.logger.Warn("dedupe: record counts disagreed with the store and were recounted", "counted", sum, "records", st.Entries)
	}
	return nil
}

// scanCounts counts the records of dbi by their state byte, reading no
// more of each: what Stats did, in one walk, before the counts were kept.
// A record too damaged to show a known state is not counted.
func scanCounts(ctx context.Context, txn *mdb.Txn, dbi mdb.DBI) (stateCounts, error) {
	var c stateCounts
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		return c, err
	}
	defer cur.Close()
	raw := txn.RawRead
	txn.RawRead = true // no copy of any key or value: no garbage
	defer func() { txn.RawRead = raw }()
	var n, inARow int
	_, v, err := cursorGet(cur, mdb.First)
	for ; err == nil || isCorrupt(err); _, v, err = cursorGet(cur, mdb.Next) {
		// An entry LMDB cannot hand over is skipped as Check skips it; the
		// cursor stands on it already.
		if err != nil {
			if inARow++; inARow == 1000 {
				return c, err
			}
			continue
		}
		inARow = 0
		if len(v) > 1 && validState(dedupe.State(v[1])) {
			c[v[1]-byte(dedupe.InFlight)]++
		}
		if n++; n%4096 == 0 {
			if cerr := ctx.Err(); cerr != nil {
				return c, cerr
			}
		}
	}
	if mdb.IsNotFound(err) {
		return c, nil
	}
	return c, err
}
