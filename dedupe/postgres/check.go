package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

// A check is UpdatedAt's read of one key, waiting for the reader.
type check struct {
	ctx   context.Context
	key   string
	at    time.Time // the answer: the row's updated_at, when found
	found bool
	err   error
	done  chan struct{} // buffered: the reader never waits for a caller
}

// UpdatedAt returns when key's row last changed (the store's clock, in
// microseconds, at each claim, takeover and finish), or ErrNotFound: how
// the tiered store checks that its local copy is still the shared record
// before it replays the copy.
//
// Checks ride batches of their own: one reader takes every check waiting
// (up to Options.MaxBatch) and reads them all with one indexed statement,
// one round trip on one connection, so that the duplicates a node answers
// at once cost Postgres one statement instead of one each, and take one
// pool connection instead of one each. They do not ride the writers'
// batches (writer.go): a check writes nothing, and there it would wait for
// the batch's commit and its WAL flush, which made tiered's duplicates
// slower than one statement each (BENCHMARKS.md, "Tiered against
// Postgres").
func (s *Store) UpdatedAt(ctx context.Context, key string) (time.Time, error) {
	if err := dedupe.CheckKey(key); err != nil {
		return time.Time{}, err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return time.Time{}, err
	}
	defer cancel()
	c := &check{ctx: ctx, key: key, done: make(chan struct{}, 1)}
	select {
	case s.checks <- c:
	case <-ctx.Done():
		return time.Time{}, s.wrap("check", ctx.Err())
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return time.Time{}, s.wrap("check", ctx.Err())
	}
	switch {
	case c.err != nil:
		return time.Time{}, s.wrap("check", c.err)
	case !c.found:
		return time.Time{}, dedupe.ErrNotFound
	}
	return c.at, nil
}

// checkSQL reads the updated_at of a batch of keys; an absent key returns
// no row.
const checkSQL = `SELECT r.key, r.updated_at FROM %s r WHERE r.key = ANY($1::text[])`

// readLoop is the reader: it takes every check waiting, reads them as one
// statement, answers, and starts again. On quit it answers what is left
// ErrClosed.
func (s *Store) readLoop() {
	defer s.readerWG.Done()
	batch := make([]*check, 0, s.opts.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case c := <-s.checks:
			batch = append(batch, c)
		case <-s.quit:
			for {
				select {
				case c := <-s.checks:
					c.err = dedupe.ErrClosed
					c.done <- struct{}{}
				default:
					return
				}
			}
		}
	gather:
		for len(batch) < s.opts.MaxBatch {
			select {
			case c := <-s.checks:
				batch = append(batch, c)
			default:
				break gather
			}
		}
		s.readChecks(batch)
		for _, c := range batch {
			c.done <- struct{}{}
		}
	}
}

// readChecks answers batch with one statement, within OpTimeout. A check
// whose caller has gone is left out; a key asked twice is read once.
func (s *Store) readChecks(batch []*check) {
	keys := make([]string, 0, len(batch))
	byKey := make(map[string][]*check, len(batch))
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			continue
		}
		if byKey[c.key] == nil {
			keys = append(keys, c.key)
		}
		byKey[c.key] = append(byKey[c.key], c)
	}
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.OpTimeout)
	defer cancel()
	err := s.readUpdatedAt(ctx, keys, func(key string, at time.Time) error {
		cs := byKey[key]
		if cs == nil {
			return fmt.Errorf("check returned key %q, not in the batch", key)
		}
		for _, c := range cs {
			c.at, c.found = at.UTC(), true
		}
		return nil
	})
	if err != nil {
		for _, cs := range byKey {
			for _, c := range cs {
				c.at, c.found, c.err = time.Time{}, false, err
			}
		}
	}
}

// readUpdatedAt runs checkSQL for keys, handing each row to row.
func (s *Store) readUpdatedAt(ctx context.Context, keys []string, row func(string, time.Time) error) error {
	rows, err := s.pool.Query(ctx, s.checkSQL, keys)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			key string
			at  time.Time
		)
		if err := rows.Scan(&key, &at); err != nil {
			return err
		}
		if err := row(key, at); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return nil
}
