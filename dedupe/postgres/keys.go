package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	if err := CheckKey(key); err != nil {
		return err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	// A lease (a claim's or a redrive's) holds the row while token is set
	// and lease_until is ahead.
	tag, err := s.pool.Exec(ctx, `DELETE FROM `+s.table+` WHERE key = $1 AND ($2 OR NOT (token <> 0 AND lease_until > `+sqlNow(3)+`))`, key, force, s.clock())
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
	if err := CheckKey(key); err != nil {
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
	// A finished row ($6, $7) changes by its token and lease only, so that
	// a redrive that never answers leaves it as it was; an abandoned claim
	// ($8) is taken over as Claim would.
	rec, err := scanRecord(s.pool.QueryRow(ctx, `UPDATE `+s.table+` SET token = $2, lease_until = c.now + `+sqlMicros(4)+`,
		attempts = CASE WHEN state = $8 THEN attempts + 1 ELSE attempts END,
		updated_at = CASE WHEN state = $8 THEN c.now ELSE updated_at END,
		expires_at = CASE WHEN state = $8 THEN c.now + `+sqlMicros(4)+` + `+sqlMicros(5)+` ELSE expires_at END
		FROM (SELECT `+sqlNow(3)+` AS now) c
		WHERE key = $1 AND state IN ($6, $7, $8) AND (token = 0 OR lease_until <= c.now)
			AND req_size IS NOT NULL AND COALESCE(octet_length(req_body), 0) = req_size
		RETURNING `+recordColumns,
		key, int64(token), s.clock(), s.opts.Lease.Microseconds(), s.opts.AbandonAfter.Microseconds(),
		int16(dedupe.Completed), int16(dedupe.Failed), int16(dedupe.InFlight)))
	if err == nil {
		return dedupe.Lease{Key: key, Token: token, Until: rec.LeaseUntil}, rec, nil
	}
	if !errors.Is(err, dedupe.ErrNotFound) {
		return dedupe.Lease{}, dedupe.Record{}, s.wrap("redrive", err)
	}
	var now time.Time
	cur, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+listColumns+`, `+sqlNow(2)+` FROM `+s.table+` WHERE key = $1`, key, s.clock()), &now)
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
