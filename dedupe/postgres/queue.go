package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webhookd/webhookd/dedupe"
)

// The queue of store and forward (dedupe.Queue), in the records table:
// a queued event is a row in state QUEUED with its destination, arrival
// (queued_at) and due time (next_attempt). dueIndex, partial on QUEUED,
// orders each destination's rows by due time, so that Take reads the rows
// it takes; waitingIndex gives the oldest waiting one; the count triggers
// keep DepthTable. Enqueue rides in the writers' batches (writer.go) with
// the claims and settles; Take locks the rows it takes with FOR UPDATE
// SKIP LOCKED, so that nodes taking from one destination at once never
// take the same event, and moves each row's due time to the end of its
// lease, so that an attempt lost with its node comes due again.

// enqueueSQL inserts a batch of queued events; a key that has a row
// already returns nothing, and Enqueue reads that row.
const enqueueSQL = `WITH input AS (
	SELECT * FROM unnest(@keys::text[], @destinations::text[], @fingerprints::text[],
		@req_content_types::text[], @req_event_types::text[], @req_bodies::bytea[], @req_sizes::integer[], @max_ages_us::bigint[])
		AS i (key, destination, fingerprint, req_content_type, req_event_type, req_body, req_size, max_age_us)
),
clock AS MATERIALIZED (
	SELECT COALESCE(@now::timestamptz, clock_timestamp()) AS now
)
INSERT INTO %[1]s (key, state, token, attempts, created_at, updated_at, expires_at, fingerprint,
	req_content_type, req_event_type, req_body, req_size, destination, queued_at, next_attempt)
SELECT i.key, @queued, 0, 0, c.now, c.now, c.now + (i.max_age_us + @keep_us::bigint) * interval '1 microsecond', i.fingerprint,
	i.req_content_type, i.req_event_type, i.req_body, i.req_size, i.destination, c.now, c.now
FROM input i, clock c
ORDER BY i.key
ON CONFLICT (key) DO NOTHING
RETURNING key`

// Enqueue stores e QUEUED, due now, unless its key has a row already
// (dedupe.Queue.Enqueue).
func (s *Store) Enqueue(ctx context.Context, e dedupe.Enqueue) (*dedupe.Record, error) {
	destination, err := dedupe.CheckEnqueue(&e)
	if err != nil {
		return nil, err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	e.Fingerprint = pgText(e.Fingerprint)
	for range 5 {
		o := newOp(ctx, opEnqueue, e.Key, 0)
		o.fingerprint, o.req, o.destination, o.maxAge = e.Fingerprint, e.Request, destination, e.MaxAge
		if err := s.send(ctx, o); err != nil {
			return nil, s.wrap("enqueue", err)
		}
		if o.claimed {
			return nil, nil
		}
		rec, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+listColumns+` FROM `+s.table+` WHERE key = @key`, pgx.NamedArgs{"key": e.Key}))
		if errors.Is(err, dedupe.ErrNotFound) {
			continue // deleted since the insert met it
		}
		if err != nil {
			return nil, s.wrap("enqueue", err)
		}
		return dedupe.DecideEnqueue(&rec, e.Fingerprint)
	}
	return nil, fmt.Errorf("%w: key %q kept changing under the enqueue", dedupe.ErrUnavailable, e.Key)
}

// queueEnqueues adds the statement inserting enqueues' events to b.
func (s *Store) queueEnqueues(b *pgx.Batch, enqueues []*op) {
	if len(enqueues) == 0 {
		return
	}
	n := len(enqueues)
	var (
		keys     = make([]string, n)
		dests    = make([]string, n)
		fps      = make([]string, n)
		reqCTs   = make([]string, n)
		reqTypes = make([]string, n)
		reqBody  = make([][]byte, n)
		reqSizes = make([]int32, n)
		maxAges  = make([]int64, n)
		byKey    = make(map[string]*op, n)
	)
	for i, o := range enqueues {
		keys[i], dests[i], fps[i], maxAges[i] = o.key, o.destination, o.fingerprint, o.maxAge.Microseconds()
		reqCTs[i], reqTypes[i], reqBody[i], reqSizes[i] = pgText(o.req.ContentType), pgText(o.req.EventType), o.req.Body, int32(o.req.Size)
		byKey[o.key] = o
	}
	s.enqueueSQL.queue(b, pgx.NamedArgs{
		"keys": keys, "destinations": dests, "fingerprints": fps,
		"req_content_types": reqCTs, "req_event_types": reqTypes, "req_bodies": reqBody, "req_sizes": reqSizes, "max_ages_us": maxAges,
		"now": s.clock(), "keep_us": (s.opts.Lease + s.opts.Retention).Microseconds(), "queued": int16(dedupe.Queued),
	}).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var key string
			if err := rows.Scan(&key); err != nil {
				return err
			}
			if o := byKey[key]; o != nil {
				o.claimed = true
			}
		}
		return rows.Err()
	})
}

// takeSQL leases up to @limit due events of a destination, one token of
// @tokens each; n is the event's place in due order.
var takeSQL = `WITH clock AS MATERIALIZED (
	SELECT COALESCE(@now::timestamptz, clock_timestamp()) AS now
),
locked AS (
	SELECT r.key, r.next_attempt FROM %[1]s r
	WHERE r.state = ` + fmt.Sprint(int(dedupe.Queued)) + ` AND r.destination = @destination
		AND r.next_attempt <= (SELECT now FROM clock)
	ORDER BY r.next_attempt LIMIT @limit
	FOR UPDATE OF r SKIP LOCKED
),
numbered AS (
	SELECT key, row_number() OVER (ORDER BY next_attempt, key) AS n FROM locked
),
tokens AS (
	SELECT * FROM unnest(@tokens::bigint[]) WITH ORDINALITY AS t (token, n)
)
UPDATE %[1]s r SET token = k.token, lease_until = c.now + @lease_us::bigint * interval '1 microsecond',
	next_attempt = c.now + @lease_us::bigint * interval '1 microsecond', updated_at = c.now
FROM numbered d JOIN tokens k ON k.n = d.n, clock c
WHERE r.key = d.key
RETURNING %[2]s, d.n`

// Take leases up to limit due events of destination (dedupe.Queue.Take).
func (s *Store) Take(ctx context.Context, destination string, limit int) ([]dedupe.Attempt, error) {
	if err := dedupe.CheckDestination(destination); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	tokens := make([]int64, limit)
	for i := range tokens {
		t, err := dedupe.NewToken()
		if err != nil {
			return nil, err
		}
		tokens[i] = int64(t)
	}
	rows, err := s.pool.Query(ctx, s.takeSQL, pgx.NamedArgs{
		"destination": destination, "limit": limit, "tokens": tokens, "now": s.clock(), "lease_us": s.opts.Lease.Microseconds(),
	})
	if err != nil {
		return nil, s.wrap("take", err)
	}
	defer rows.Close()
	type numbered struct {
		n int64
		a dedupe.Attempt
	}
	var got []numbered
	for rows.Next() {
		var n int64
		rec, err := scanRecord(rows, &n)
		if err != nil {
			return nil, s.wrap("take", err)
		}
		got = append(got, numbered{n, dedupe.Attempt{Lease: dedupe.Lease{Key: rec.Key, Token: rec.Token, Until: rec.LeaseUntil}, Record: rec}})
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("take", err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].n < got[j].n })
	out := make([]dedupe.Attempt, len(got))
	for i := range got {
		out[i] = got[i].a
	}
	return out, nil
}

// settleAttemptSQL ends a batch of attempts in one statement: each row
// guarded by its attempt's token, back to QUEUED due at next (retry) or
// FAILED with its reason (fail); an attempt that lost its lease returns no
// row.
const settleAttemptSQL = `WITH input AS (
	SELECT * FROM unnest(@keys::text[], @tokens::bigint[], @fail::boolean[], @nexts::timestamptz[], @statuses::integer[],
		@content_types::text[], @bodies::bytea[], @reasons::text[])
		AS i (key, token, fail, next, status, content_type, body, reason)
),
clock AS MATERIALIZED (
	SELECT COALESCE(@now::timestamptz, clock_timestamp()) AS now
)
UPDATE %[1]s r SET token = 0, lease_until = NULL, attempts = r.attempts + 1,
	state = CASE WHEN i.fail THEN @failed ELSE r.state END,
	retries = CASE WHEN i.fail THEN r.retries ELSE r.retries + 1 END,
	next_attempt = CASE WHEN i.fail THEN r.next_attempt ELSE i.next END,
	expires_at = CASE WHEN i.fail THEN c.now + @retention_us::bigint * interval '1 microsecond' ELSE r.expires_at END,
	reason = CASE WHEN i.fail THEN i.reason ELSE r.reason END,
	updated_at = c.now, status = i.status, content_type = i.content_type, body = i.body
FROM input i, clock c
WHERE r.key = i.key AND r.token = i.token AND r.token <> 0 AND r.state = @queued
RETURNING r.key`

// Retry puts l's event back to QUEUED, due at next: an op of the writers'
// batches (writer.go), written even after ctx ends, as a settle is.
func (s *Store) Retry(ctx context.Context, l dedupe.Lease, next time.Time, resp dedupe.Response) error {
	return s.settleAttempt(ctx, l, false, next, resp, "")
}

// FailAttempt records l's event FAILED with resp and reason, as Retry
// does.
func (s *Store) FailAttempt(ctx context.Context, l dedupe.Lease, resp dedupe.Response, reason string) error {
	return s.settleAttempt(ctx, l, true, time.Time{}, resp, reason)
}

func (s *Store) settleAttempt(ctx context.Context, l dedupe.Lease, fail bool, next time.Time, resp dedupe.Response, reason string) error {
	if len(resp.Body) > dedupe.MaxStoredBody {
		resp.Body = resp.Body[:dedupe.MaxStoredBody]
	}
	o := newOp(context.WithoutCancel(ctx), opAttempt, l.Key, l.Token)
	o.fail, o.next, o.resp, o.reason = fail, next, resp, dedupe.CutReason(reason)
	if err := s.settle(ctx, o); err != nil {
		return err
	}
	if !o.found {
		return dedupe.ErrLeaseLost
	}
	return nil
}

// Settle ends the attempts each as its own op, all at once: they wait for
// the writer together and ride one of its batches (writer.go), one round
// trip and one transaction (dedupe.Queue.Settle, dedupe.SettleEach).
func (s *Store) Settle(ctx context.Context, settlements []dedupe.Settlement) ([]error, error) {
	return dedupe.SettleEach(ctx, s, settlements)
}

// queueAttempts adds the statement settling attempts to b.
func (s *Store) queueAttempts(b *pgx.Batch, attempts []*op) {
	if len(attempts) == 0 {
		return
	}
	n := len(attempts)
	var (
		keys     = make([]string, n)
		tokens   = make([]int64, n)
		fails    = make([]bool, n)
		nexts    = make([]*time.Time, n)
		statuses = make([]int32, n)
		cts      = make([]string, n)
		bodies   = make([][]byte, n)
		reasons  = make([]string, n)
		byKey    = make(map[string]*op, n)
	)
	for i, o := range attempts {
		keys[i], tokens[i], fails[i] = o.key, int64(o.token), o.fail
		if !o.fail {
			next := o.next.UTC()
			nexts[i] = &next
		}
		statuses[i], cts[i], bodies[i], reasons[i] = int32(o.resp.Status), pgText(o.resp.ContentType), o.resp.Body, pgText(o.reason)
		byKey[o.key] = o
	}
	s.settleAttemptSQL.queue(b, pgx.NamedArgs{
		"keys": keys, "tokens": tokens, "fail": fails, "nexts": nexts, "statuses": statuses, "content_types": cts,
		"bodies": bodies, "reasons": reasons, "now": s.clock(), "retention_us": s.opts.Retention.Microseconds(),
		"queued": int16(dedupe.Queued), "failed": int16(dedupe.Failed),
	}).Query(func(rows pgx.Rows) error {
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

// Requeue puts a FAILED queued event back to QUEUED, due now: one UPDATE
// that checks what dedupe.CheckRequeue does, so that of concurrent
// redrives on any nodes one wins; when it changes nothing, the row is read
// to say why.
func (s *Store) Requeue(ctx context.Context, key string, maxAge time.Duration) (dedupe.Record, error) {
	if err := dedupe.CheckKey(key); err != nil {
		return dedupe.Record{}, err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return dedupe.Record{}, err
	}
	defer cancel()
	rec, err := scanRecord(s.pool.QueryRow(ctx, `UPDATE `+s.table+` SET state = @queued, token = 0, lease_until = NULL,
		retries = 0, reason = NULL, queued_at = c.now, next_attempt = c.now, updated_at = c.now,
		expires_at = c.now + @keep_us::bigint * interval '1 microsecond'
		FROM (SELECT `+sqlNow+` AS now) c
		WHERE key = @key AND state = @failed AND destination IS NOT NULL AND (token = 0 OR lease_until <= c.now)
			AND req_size IS NOT NULL AND COALESCE(octet_length(req_body), 0) = req_size
		RETURNING `+recordColumns,
		pgx.NamedArgs{"key": key, "now": s.clock(), "queued": int16(dedupe.Queued), "failed": int16(dedupe.Failed),
			"keep_us": (max(maxAge, 0) + s.opts.Lease + s.opts.Retention).Microseconds()}))
	if err == nil {
		return rec, nil
	}
	if !errors.Is(err, dedupe.ErrNotFound) {
		return dedupe.Record{}, s.wrap("requeue", err)
	}
	var now time.Time
	cur, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+listColumns+`, `+sqlNow+` FROM `+s.table+` WHERE key = @key`,
		pgx.NamedArgs{"key": key, "now": s.clock()}), &now)
	if err != nil {
		return dedupe.Record{}, s.wrap("requeue", err)
	}
	if err := dedupe.CheckRequeue(&cur, now.UTC()); err != nil {
		return cur, err
	}
	return dedupe.Record{}, fmt.Errorf("%w: key %q changed while being requeued", dedupe.ErrUnavailable, key)
}

// QueueStats reads destination's depth rows and the first entry of
// waitingIndex.
func (s *Store) QueueStats(ctx context.Context, destination string) (dedupe.QueueStats, error) {
	if err := dedupe.CheckDestination(destination); err != nil {
		return dedupe.QueueStats{}, err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return dedupe.QueueStats{}, err
	}
	defer cancel()
	var (
		depth  int64
		oldest *time.Time
	)
	err = s.pool.QueryRow(ctx, `SELECT COALESCE((SELECT sum(n) FROM `+s.depth+` WHERE destination = @destination), 0)::bigint,
		(SELECT r.queued_at FROM `+s.table+` r WHERE `+waitingPredicate+` AND r.destination = @destination
			ORDER BY r.queued_at LIMIT 1)`,
		pgx.NamedArgs{"destination": destination}).Scan(&depth, &oldest)
	if err != nil {
		return dedupe.QueueStats{}, s.wrap("queue stats", err)
	}
	st := dedupe.QueueStats{Depth: int(max(depth, 0))}
	if oldest != nil {
		st.Oldest = oldest.UTC()
	}
	return st, nil
}

// QueueDestinations reads the depth rows (DepthTable), a few per
// destination.
func (s *Store) QueueDestinations(ctx context.Context) ([]string, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT destination FROM `+s.depth+` GROUP BY destination HAVING sum(n) > 0`)
	if err != nil {
		return nil, s.wrap("queue destinations", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.wrap("queue destinations", err)
	}
	slices.Sort(names) // bytewise, as LMDB orders them, whatever the collation
	return names, nil
}

// NextDue reads the first entry of destination's due index.
func (s *Store) NextDue(ctx context.Context, destination string) (time.Time, bool, error) {
	if err := dedupe.CheckDestination(destination); err != nil {
		return time.Time{}, false, err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	defer cancel()
	var at time.Time
	err = s.pool.QueryRow(ctx, `SELECT r.next_attempt FROM `+s.table+` r WHERE r.state = `+fmt.Sprint(int(dedupe.Queued))+`
		AND r.destination = @destination ORDER BY r.next_attempt LIMIT 1`, pgx.NamedArgs{"destination": destination}).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, s.wrap("next due", err)
	}
	return at.UTC(), true, nil
}

// SetPaused inserts or deletes destination's row in PausesTable; a second
// pause keeps the first's time.
func (s *Store) SetPaused(ctx context.Context, destination string, paused bool) error {
	if err := dedupe.CheckDestination(destination); err != nil {
		return err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	q := `DELETE FROM ` + s.pauses + ` WHERE destination = @destination`
	if paused {
		q = `INSERT INTO ` + s.pauses + ` (destination, since) VALUES (@destination, ` + sqlNow + `) ON CONFLICT (destination) DO NOTHING`
	}
	_, err = s.pool.Exec(ctx, q, pgx.NamedArgs{"destination": destination, "now": s.clock()})
	return s.wrap("pause", err)
}

// Paused reads PausesTable.
func (s *Store) Paused(ctx context.Context) (map[string]dedupe.Pause, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT destination, since FROM `+s.pauses)
	if err != nil {
		return nil, s.wrap("paused", err)
	}
	defer rows.Close()
	out := map[string]dedupe.Pause{}
	for rows.Next() {
		var (
			name  string
			since time.Time
		)
		if err := rows.Scan(&name, &since); err != nil {
			return nil, s.wrap("paused", err)
		}
		out[name] = dedupe.Pause{Paused: true, Since: since.UTC()}
	}
	return out, s.wrap("paused", rows.Err())
}
