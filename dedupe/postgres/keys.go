package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webhookd/webhookd/dedupe"
)

// Delete removes key, refusing with ErrInFlight a key whose lease is still
// running; the check and the delete are one statement.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.delete(ctx, key, false)
}

// ForceDelete removes key whatever its state.
func (s *Store) ForceDelete(ctx context.Context, key string) error {
	return s.delete(ctx, key, true)
}

func (s *Store) delete(ctx context.Context, key string, force bool) error {
	if err := dedupe.CheckKey(key); err != nil {
		return err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	// A lease (a claim's or a redrive's) holds the row while token is set
	// and lease_until is ahead.
	tag, err := s.pool.Exec(ctx, `DELETE FROM `+s.table+`
		WHERE key = @key AND (@force OR NOT (token <> 0 AND lease_until > `+sqlNow+`))`,
		pgx.NamedArgs{"key": key, "force": force, "now": s.clock()})
	if err != nil {
		return s.wrap("delete", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	rec, err := s.get(ctx, key)
	switch {
	case err != nil:
		return err
	case !force && rec.Token != 0:
		// The statement found its lease running, by the database's clock.
		return fmt.Errorf("%w: lease runs until %s", dedupe.ErrInFlight, rec.LeaseUntil.Format(time.RFC3339))
	}
	// Claimed again between the two statements; the operator may retry.
	return fmt.Errorf("%w: key %q changed while being deleted", dedupe.ErrUnavailable, key)
}

// Redrive leases a FAILED or COMPLETED record, or an IN_FLIGHT one whose
// lease has passed, for forwarding its stored request again
// (dedupe.Store.Redrive): one UPDATE that checks
// the state, the lease (by the database's clock) and that the whole body
// is kept, so that of concurrent redrives and claims on any nodes exactly
// one wins. When it changes nothing, the row is read to say why
// (dedupe.CheckRedrive).
func (s *Store) Redrive(ctx context.Context, key string) (dedupe.Lease, dedupe.Record, error) {
	if err := dedupe.CheckKey(key); err != nil {
		return dedupe.Lease{}, dedupe.Record{}, err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return dedupe.Lease{}, dedupe.Record{}, err
	}
	defer cancel()
	token, err := dedupe.NewToken()
	if err != nil {
		return dedupe.Lease{}, dedupe.Record{}, err
	}
	// A finished row changes by its token and lease only, so that a
	// redrive that never answers leaves it as it was; an abandoned claim
	// is taken over as Claim would.
	rec, err := scanRecord(s.pool.QueryRow(ctx, `UPDATE `+s.table+` SET token = @token, lease_until = c.now + `+sqlMicros("lease_us")+`,
		attempts = CASE WHEN state = @in_flight THEN attempts + 1 ELSE attempts END,
		updated_at = CASE WHEN state = @in_flight THEN c.now ELSE updated_at END,
		expires_at = CASE WHEN state = @in_flight THEN c.now + `+sqlMicros("lease_us")+` + `+sqlMicros("abandon_us")+` ELSE expires_at END
		FROM (SELECT `+sqlNow+` AS now) c
		WHERE key = @key AND state IN (@completed, @failed, @in_flight) AND (token = 0 OR lease_until <= c.now)
			AND req_size IS NOT NULL AND COALESCE(octet_length(req_body), 0) = req_size
		RETURNING `+recordColumns,
		pgx.NamedArgs{"key": key, "token": int64(token), "now": s.clock(),
			"lease_us": s.opts.Lease.Microseconds(), "abandon_us": s.opts.AbandonAfter.Microseconds(),
			"completed": int16(dedupe.Completed), "failed": int16(dedupe.Failed), "in_flight": int16(dedupe.InFlight)}))
	if err == nil {
		return dedupe.Lease{Key: key, Token: token, Until: rec.LeaseUntil}, rec, nil
	}
	if !errors.Is(err, dedupe.ErrNotFound) {
		return dedupe.Lease{}, dedupe.Record{}, s.wrap("redrive", err)
	}
	var now time.Time
	cur, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+listColumns+`, `+sqlNow+` FROM `+s.table+` WHERE key = @key`,
		pgx.NamedArgs{"key": key, "now": s.clock()}), &now)
	if err != nil {
		return dedupe.Lease{}, dedupe.Record{}, s.wrap("redrive", err)
	}
	if err := dedupe.CheckRedrive(&cur, now.UTC()); err != nil {
		return dedupe.Lease{}, cur, err
	}
	// Finished or taken over between the two statements; the operator may
	// retry.
	return dedupe.Lease{}, dedupe.Record{}, fmt.Errorf("%w: key %q changed while being redriven", dedupe.ErrUnavailable, key)
}
