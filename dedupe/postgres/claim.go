package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webhookd/webhookd/dedupe"
)

// Claim has Store.Claim's outcomes, keeping req (may be nil) in the row it
// inserts or takes over.
//
// The claim rides in a writer's batch (writer.go): one statement claims
// every key of the batch, inserting the absent ones and taking over those
// IN_FLIGHT with a passed lease and the same fingerprint, and returns the
// row of every other key as it found it, which Decide judges (a replay, a
// running lease, a mismatch). Postgres's row locks and the key's unique
// index make the claim atomic across nodes: of concurrent claims exactly
// one inserts or takes over. A key that appeared, vanished or changed
// between the statement's snapshot and its write returns nothing, and is
// claimed again in a later batch; a few rounds settle it.
func (s *Store) Claim(ctx context.Context, key, fingerprint string, req *dedupe.Request) (dedupe.Lease, *dedupe.Record, error) {
	if err := dedupe.CheckKey(key); err != nil {
		return dedupe.Lease{}, nil, err
	}
	if s.unsettled.Holds(key) {
		return dedupe.Lease{}, nil, dedupe.ErrAnswerPending
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return dedupe.Lease{}, nil, err
	}
	defer cancel()
	token, err := dedupe.NewToken()
	if err != nil {
		return dedupe.Lease{}, nil, err
	}
	fingerprint = pgText(fingerprint)
	for range 5 {
		o := newOp(ctx, opClaim, key, token)
		o.fingerprint, o.req = fingerprint, req
		if err := s.send(ctx, o); err != nil {
			// A claim that may have committed without its answer reaching
			// us is deleted again by the writer (answer), in the
			// background: this answer comes within ctx.
			return dedupe.Lease{}, nil, s.wrap("claim", err)
		}
		switch {
		case o.claimed:
			return dedupe.Lease{Key: key, Token: token, Until: o.rec.LeaseUntil}, nil, nil
		case o.found:
			if r, err := dedupe.Decide(&o.rec, fingerprint, o.now); err != nil || r != nil {
				return dedupe.Lease{}, r, err
			}
		}
	}
	return dedupe.Lease{}, nil, fmt.Errorf("%w: key %q kept changing under the claim", dedupe.ErrUnavailable, key)
}

// claimSQL claims a batch of keys in one statement (see Claim).
//
// found is the rows the keys hold, read first, so that a replay or a
// running lease locks nothing and writes no WAL (TestPostgresClaimReadsBeforeItLocks):
// inserted only inserts keys found absent, and taken only updates (and
// locks) rows whose lease has passed. A key inserted by another
// transaction since the snapshot makes the insert do nothing, and a row
// changed since makes the update skip it: neither returns a row, and the
// claim is retried. The lease of a takeover is read from the clock after
// the row lock is granted, so that a wait for it does not shorten the
// lease (TestPostgresLeaseRunsFromTheClaim).
const claimSQL = `WITH input AS (
	SELECT * FROM unnest(@keys::text[], @tokens::bigint[], @fingerprints::text[],
		@req_content_types::text[], @req_event_types::text[], @req_bodies::bytea[], @req_sizes::integer[])
		AS i (key, token, fingerprint, req_content_type, req_event_type, req_body, req_size)
),
clock AS MATERIALIZED (
	SELECT COALESCE(@now::timestamptz, clock_timestamp()) AS now,
		@lease_us::bigint * interval '1 microsecond' AS lease,
		@abandon_us::bigint * interval '1 microsecond' AS abandon
),
found AS MATERIALIZED (
	SELECT r.* FROM %[1]s r JOIN input i ON r.key = i.key
),
inserted AS (
	INSERT INTO %[1]s (key, state, token, lease_until, attempts, created_at, updated_at, expires_at, fingerprint,
		req_content_type, req_event_type, req_body, req_size)
	SELECT i.key, @in_flight, i.token, c.now + c.lease, 1, c.now, c.now, c.now + c.lease + c.abandon, i.fingerprint,
		i.req_content_type, i.req_event_type, i.req_body, i.req_size
	FROM input i, clock c
	WHERE NOT EXISTS (SELECT FROM found f WHERE f.key = i.key)
	ORDER BY i.key
	ON CONFLICT (key) DO NOTHING
	RETURNING %[2]s
),
taken AS (
	UPDATE %[1]s r SET (state, token, lease_until, attempts, updated_at, expires_at,
			req_content_type, req_event_type, req_body, req_size) =
		(SELECT @in_flight, i.token, t.now + c.lease, r.attempts + 1, t.now, t.now + c.lease + c.abandon,
			i.req_content_type, i.req_event_type, i.req_body, i.req_size
		FROM (SELECT COALESCE(@now::timestamptz, clock_timestamp()) AS now) t)
	FROM input i, clock c
	WHERE r.key = i.key AND r.state = @in_flight AND r.lease_until <= c.now AND r.fingerprint = i.fingerprint
	RETURNING %[3]s
)
SELECT w.*, true, c.now FROM (SELECT * FROM inserted UNION ALL SELECT * FROM taken) w, clock c
UNION ALL
SELECT %[4]s, false, c.now FROM found f, clock c WHERE NOT EXISTS (SELECT FROM taken t WHERE t.key = f.key)`

// claimedColumns are recordColumns as a claim returns them for the row it
// wrote: without the bodies, which the claimer has or does not need. The
// rows it found are returned as a replay reads them (replayColumns).
const claimedColumns = recordHead + `NULL::bytea, req_content_type, req_event_type, NULL::bytea, req_size, false` + queueColumns

// claimStatement is claimSQL for table t.
func claimStatement(t string) string {
	return fmt.Sprintf(claimSQL, t, claimedColumns, prefixColumns("r.", claimedColumns), prefixColumns("f.", replayColumns))
}

// queueClaims adds the statement claiming claims' keys to b, with the
// reading of its rows into the ops.
func (s *Store) queueClaims(b *pgx.Batch, claims []*op) {
	if len(claims) == 0 {
		return
	}
	n := len(claims)
	var (
		keys     = make([]string, n)
		tokens   = make([]int64, n)
		fps      = make([]string, n)
		reqCTs   = make([]*string, n)
		reqTypes = make([]*string, n)
		reqBody  = make([][]byte, n)
		reqSizes = make([]*int32, n)
		byKey    = make(map[string]*op, n)
	)
	for i, o := range claims {
		keys[i], tokens[i], fps[i] = o.key, int64(o.token), o.fingerprint
		byKey[o.key] = o
		if r := o.req; r != nil {
			ct, et, size := pgText(r.ContentType), pgText(r.EventType), int32(r.Size)
			reqCTs[i], reqTypes[i], reqBody[i], reqSizes[i] = &ct, &et, r.Body, &size
		}
	}
	s.claimSQL.queue(b, pgx.NamedArgs{
		"keys": keys, "tokens": tokens, "fingerprints": fps,
		"req_content_types": reqCTs, "req_event_types": reqTypes, "req_bodies": reqBody, "req_sizes": reqSizes,
		"now": s.clock(), "lease_us": s.opts.Lease.Microseconds(), "abandon_us": s.opts.AbandonAfter.Microseconds(),
		"in_flight": int16(dedupe.InFlight),
	}).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var (
				won bool
				now time.Time
			)
			rec, err := scanRecord(rows, &won, &now)
			if err != nil {
				return err
			}
			o := byKey[rec.Key]
			if o == nil {
				return fmt.Errorf("claim returned key %q, not in the batch", rec.Key)
			}
			o.claimed, o.found, o.rec, o.now = won, !won, rec, now.UTC()
		}
		return rows.Err()
	})
}
