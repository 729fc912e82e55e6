package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/webhookd/webhookd/dedupe"
)

// Get returns the record of key, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (dedupe.Record, error) {
	if err := dedupe.CheckKey(key); err != nil {
		return dedupe.Record{}, err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return dedupe.Record{}, err
	}
	defer cancel()
	return s.get(ctx, key)
}

func (s *Store) get(ctx context.Context, key string) (dedupe.Record, error) {
	rec, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM `+s.table+` WHERE key = @key`, pgx.NamedArgs{"key": key}))
	return rec, s.wrap("get", err)
}

// List returns records in key order (bytewise, as Store does).
func (s *Store) List(ctx context.Context, o dedupe.ListOptions) ([]dedupe.Record, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	q := `SELECT ` + listColumns + ` FROM ` + s.table + `
		WHERE key > @after AND starts_with(key, @prefix) AND (@state = 0 OR state = @state) ORDER BY key`
	args := pgx.NamedArgs{"after": o.After, "prefix": o.Prefix, "state": int16(o.State)}
	if o.Limit > 0 {
		q += ` LIMIT @limit`
		args["limit"] = o.Limit
	}
	rows, err := s.pool.Query(ctx, q, args)
	if err != nil {
		return nil, s.wrap("list", err)
	}
	defer rows.Close()
	var out []dedupe.Record
	for rows.Next() {
		rec, err := scanRecord(rows)
		if err != nil {
			return nil, s.wrap("list", err)
		}
		out = append(out, rec)
	}
	return out, s.wrap("list", rows.Err())
}

// Stats counts records by state: it sums the few rows of the counts table
// the triggers keep (at most countSlots per state), whatever the number of
// records, and never reads the records table.
func (s *Store) Stats(ctx context.Context) (map[dedupe.State]int, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT state, sum(n)::bigint FROM `+s.counts+` GROUP BY state HAVING sum(n) <> 0`)
	if err != nil {
		return nil, s.wrap("stats", err)
	}
	defer rows.Close()
	counts := map[dedupe.State]int{}
	for rows.Next() {
		var (
			st int16
			n  int64
		)
		if err := rows.Scan(&st, &n); err != nil {
			return nil, s.wrap("stats", err)
		}
		counts[dedupe.State(st)] = int(n)
	}
	return counts, s.wrap("stats", rows.Err())
}

// Recent returns records newest first, one index range scan: on
// (created_at, key), or on the FAILED records' partial index when the
// state filter is FAILED. The provider filter is checked on the rows the
// scan reads, so a rare provider reads more of the index than it returns.
func (s *Store) Recent(ctx context.Context, o dedupe.RecentOptions) ([]dedupe.Record, string, error) {
	cur, err := dedupe.DecodeCursor(o.Cursor)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, "", err
	}
	defer cancel()
	limit := o.PageLimit()
	args := pgx.NamedArgs{"ping_key": pgPingKey, "limit": limit + 1}
	where := `key <> @ping_key`
	if o.Cursor != "" {
		// The cursor holds nanoseconds; Postgres keeps microseconds, so
		// the cursor of a row it returned compares equal to the row.
		where += ` AND (created_at, key) < (@cursor_created::timestamptz, @cursor_key)`
		args["cursor_created"], args["cursor_key"] = cur.CreatedAt, cur.Key
	}
	switch {
	case o.State == dedupe.Failed:
		// Spelled out so that the planner uses the partial index (a
		// parameter would not match its predicate).
		where += ` AND ` + failedPredicate
	case o.State != 0:
		where += ` AND state = @state`
		args["state"] = int16(o.State)
	}
	if o.Provider != "" {
		where += ` AND starts_with(key, @provider_prefix)`
		args["provider_prefix"] = o.Provider + ":"
	}
	switch suffix := dedupe.DestinationSuffix(o.Destination); {
	case o.Destination == "":
	case suffix == "":
		// The default destination's keys name none.
		where += ` AND strpos(key, @dest_sep) = 0`
		args["dest_sep"] = string(dedupe.DestinationSep)
	default:
		where += ` AND right(key, @dest_len) = @dest_suffix`
		args["dest_len"], args["dest_suffix"] = len(suffix), suffix
	}
	rows, err := s.pool.Query(ctx, `SELECT `+listColumns+` FROM `+s.table+` WHERE `+where+`
		ORDER BY created_at DESC, key DESC LIMIT @limit`, args)
	if err != nil {
		return nil, "", s.wrap("recent", err)
	}
	defer rows.Close()
	var out []dedupe.Record
	for rows.Next() {
		rec, err := scanRecord(rows)
		if err != nil {
			return nil, "", s.wrap("recent", err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.wrap("recent", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = dedupe.EncodeCursor(&out[limit-1])
	}
	return out, next, nil
}
