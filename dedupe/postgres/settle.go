package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/webhookd/webhookd/dedupe"
)

// Complete records a delivered event with the downstream's response. It
// takes effect even when ctx ends first (see settle).
func (s *Store) Complete(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	_, err := s.FinishRecord(ctx, l, dedupe.Completed, resp)
	return err
}

// Fail records an event the downstream rejected permanently.
func (s *Store) Fail(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	_, err := s.FinishRecord(ctx, l, dedupe.Failed, resp)
	return err
}

// FinishRecord is Complete (st Completed) or Fail (st Failed), also
// returning the record as stored (without its request body, as a replay
// reads it), from the same statement, so that the tiered store copies it
// without reading it back. Any other st is refused: only a finished state
// may replace a lease. The statement checks the lease (its token) and
// records the answer; no row means the lease was lost (taken over,
// released, deleted or finished already).
func (s *Store) FinishRecord(ctx context.Context, l dedupe.Lease, st dedupe.State, resp dedupe.Response) (dedupe.Record, error) {
	if st != dedupe.Completed && st != dedupe.Failed {
		return dedupe.Record{}, fmt.Errorf("dedupe: postgres: cannot finish a record as %v", st)
	}
	if len(resp.Body) > dedupe.MaxStoredBody {
		resp.Body = resp.Body[:dedupe.MaxStoredBody]
	}
	o := newOp(context.WithoutCancel(ctx), opFinish, l.Key, l.Token)
	o.state, o.resp, o.until = st, resp, l.Until
	if err := s.settle(ctx, o); err != nil {
		return dedupe.Record{}, err
	}
	if !o.found {
		return dedupe.Record{}, dedupe.ErrLeaseLost
	}
	return o.rec, nil
}

// Release deletes the caller's IN_FLIGHT record, or drops a redrive's
// lease from the finished record it left as it was. Like Complete and
// Fail, it takes effect even when ctx ends first (see settle).
func (s *Store) Release(ctx context.Context, l dedupe.Lease) error {
	o := newOp(context.WithoutCancel(ctx), opRelease, l.Key, l.Token)
	if err := s.settle(ctx, o); err != nil {
		return err
	}
	if !o.found {
		return dedupe.ErrLeaseLost
	}
	return nil
}

// settle hands o, the write that records how a claimed delivery ended
// (finish, release), to a writer. Unlike a claim, such a write is worth
// making even after its caller has stopped waiting (the receiver bounds
// each store call by its store timeout): it only records what happened
// under a lease that the token in its WHERE clause still guards, so a late
// one that lost the lease matches no row (ErrLeaseLost) and touches no new
// owner. Skipped, it would leave the key IN_FLIGHT until the lease passes,
// and the provider's next delivery of an event the core service already
// has would be forwarded again. So o runs whatever ctx says, within its
// batch's OpTimeout; only the caller's wait ends with ctx, and then its
// error says the write may still take effect. A finish that fails with
// the store unavailable, or whose outcome is unknown, is written again
// until it lands or its lease passes (retry.go); a release is not: the
// key it leaves IN_FLIGHT is taken over once the lease passes, which is
// what a release asks for.
//
// When the caller gives up first, the batch's OpTimeout starts again from
// then: the receiver's store timeout and OpTimeout are one setting, so a
// bound counted from the batch's start would run out with the caller and
// the write would be skipped after all (TestPostgresSettleOutlastsItsCaller).
func (s *Store) settle(ctx context.Context, o *op) error {
	if s.closed.Load() {
		return dedupe.ErrClosed
	}
	return s.send(ctx, o)
}

// finishSQL records the answers of a batch of leases in one statement; a
// lease that no longer holds its key (its token) returns no row. The token
// is a claim's (the row IN_FLIGHT) or a redrive's, whose answer counts one
// more attempt (Redrive).
const finishSQL = `WITH input AS (
	SELECT * FROM unnest(@keys::text[], @tokens::bigint[], @states::smallint[], @statuses::integer[],
		@content_types::text[], @bodies::bytea[])
		AS i (key, token, state, status, content_type, body)
),
clock AS MATERIALIZED (
	SELECT COALESCE(@now::timestamptz, clock_timestamp()) AS now,
		@retention_us::bigint * interval '1 microsecond' AS retention
)
UPDATE %[1]s r SET state = i.state, token = 0, lease_until = NULL,
	attempts = CASE WHEN r.state = @in_flight THEN r.attempts ELSE r.attempts + 1 END,
	updated_at = c.now, expires_at = c.now + c.retention, status = i.status, content_type = i.content_type, body = i.body
FROM input i, clock c
WHERE r.key = i.key AND r.token = i.token AND r.token <> 0
RETURNING %[2]s`

// releaseSQL ends a batch of leases: a claim's row (IN_FLIGHT) is
// deleted, a redrive's finished row loses the lease and is otherwise left
// as it was. A lease that no longer holds its key returns no row.
const releaseSQL = `WITH input AS (
	SELECT * FROM unnest(@keys::text[], @tokens::bigint[]) AS i (key, token)
),
claims AS (
	DELETE FROM %[1]s r USING input i
	WHERE r.key = i.key AND r.token = i.token AND r.token <> 0 AND r.state = @in_flight
	RETURNING r.key
),
redrives AS (
	UPDATE %[1]s r SET token = 0, lease_until = NULL FROM input i
	WHERE r.key = i.key AND r.token = i.token AND r.token <> 0 AND r.state <> @in_flight
	RETURNING r.key
)
SELECT key FROM claims UNION ALL SELECT key FROM redrives`

// queueFinishes adds the statement finishing finishes' leases to b.
func (s *Store) queueFinishes(b *pgx.Batch, finishes []*op) {
	if len(finishes) == 0 {
		return
	}
	n := len(finishes)
	var (
		keys     = make([]string, n)
		tokens   = make([]int64, n)
		states   = make([]int16, n)
		statuses = make([]int32, n)
		cts      = make([]string, n)
		bodies   = make([][]byte, n)
		byKey    = make(map[string]*op, n)
	)
	for i, o := range finishes {
		keys[i], tokens[i], states[i] = o.key, int64(o.token), int16(o.state)
		statuses[i], cts[i], bodies[i] = int32(o.resp.Status), pgText(o.resp.ContentType), o.resp.Body
		byKey[o.key] = o
	}
	s.finishSQL.queue(b, pgx.NamedArgs{
		"keys": keys, "tokens": tokens, "states": states, "statuses": statuses, "content_types": cts, "bodies": bodies,
		"now": s.clock(), "retention_us": s.opts.Retention.Microseconds(), "in_flight": int16(dedupe.InFlight),
	}).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			rec, err := scanRecord(rows)
			if err != nil {
				return err
			}
			o := byKey[rec.Key]
			if o == nil {
				return fmt.Errorf("finish returned key %q, not in the batch", rec.Key)
			}
			o.found, o.rec = true, rec
		}
		return rows.Err()
	})
}

// queueReleases adds the statement releasing releases' leases to b.
func (s *Store) queueReleases(b *pgx.Batch, releases []*op) {
	if len(releases) == 0 {
		return
	}
	keys, tokens := make([]string, len(releases)), make([]int64, len(releases))
	byKey := make(map[string]*op, len(releases))
	for i, o := range releases {
		keys[i], tokens[i] = o.key, int64(o.token)
		byKey[o.key] = o
	}
	s.releaseSQL.queue(b, pgx.NamedArgs{"keys": keys, "tokens": tokens, "in_flight": int16(dedupe.InFlight)}).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var key string
				if err := rows.Scan(&key); err != nil {
					return err
				}
				if o := byKey[key]; o != nil {
					o.found = true
				}
			}
			return rows.Err()
		})
}

// queueEach queues every op as its own statement (of one row each) in the
// same pipeline: the alternative to one statement per kind, kept for
// BenchmarkWriterBatch, which compares the two.
func (s *Store) queueEach(b *pgx.Batch, claims, finishes, releases []*op) {
	for _, o := range claims {
		s.queueClaims(b, []*op{o})
	}
	for _, o := range finishes {
		s.queueFinishes(b, []*op{o})
	}
	for _, o := range releases {
		s.queueReleases(b, []*op{o})
	}
}
