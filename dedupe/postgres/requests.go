package postgres

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webhookd/webhookd/dedupe"
)

// RequestsTable is the request log's table, in the same schema as Table,
// shared by every node on the database.
const RequestsTable = "webhookd_requests"

// The request log is a table of its own, created on first use (when it is
// missing: a user without CREATE can run on one an administrator made, see
// docs/postgres.md). A batch of entries is one transaction with
// synchronous_commit off: the log may lose its last entries in a crash of
// the database (the contract allows the last second), and a flood of
// requests costs no WAL flush of its own.
type requestLog struct {
	once  sync.Mutex
	ready bool
	table string
	index string
}

const requestsDDL = `CREATE TABLE IF NOT EXISTS %[1]s (
	id          bigserial PRIMARY KEY,
	at          timestamptz NOT NULL,
	source      text NOT NULL,
	provider    text NOT NULL,
	outcome     text NOT NULL,
	reason      text NOT NULL,
	status      integer NOT NULL,
	size        bigint NOT NULL,
	remote_addr text NOT NULL,
	event_key   text NOT NULL,
	type        text NOT NULL
);
CREATE INDEX IF NOT EXISTS %[2]s ON %[1]s (at)`

// requests returns the request log's table name, creating it if missing.
func (s *Store) requests(ctx context.Context) (string, error) {
	r := &s.reqlog
	r.once.Lock()
	defer r.once.Unlock()
	if r.ready {
		return r.table, nil
	}
	r.table = qualified(s.opts.Schema, RequestsTable)
	r.index = pgx.Identifier{RequestsTable + "_at"}.Sanitize()
	var have bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass(@table) IS NOT NULL`, pgx.NamedArgs{"table": r.table}).Scan(&have); err != nil {
		return "", s.wrap("look up the request log", err)
	}
	if !have {
		if _, err := s.pool.Exec(ctx, fmt.Sprintf(requestsDDL, r.table, r.index)); err != nil {
			return "", s.wrap("create the request log", err)
		}
	}
	r.ready = true
	return r.table, nil
}

// AppendRequests adds entries in one transaction and trims the log to b.
func (s *Store) AppendRequests(ctx context.Context, entries []dedupe.LoggedRequest, b dedupe.RequestLogBounds) error {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	table, err := s.requests(ctx)
	if err != nil {
		return err
	}
	cols := struct {
		at                                                  []time.Time
		source, provider, outcome, reason, remote, key, typ []string
		status                                              []int32
		size                                                []int64
	}{}
	for _, e := range entries {
		cols.at = append(cols.at, e.Time.UTC())
		cols.source, cols.provider = append(cols.source, e.Source), append(cols.provider, e.Provider)
		cols.outcome, cols.reason = append(cols.outcome, e.Outcome), append(cols.reason, e.Reason)
		cols.remote, cols.key, cols.typ = append(cols.remote, e.RemoteAddr), append(cols.key, e.EventKey), append(cols.typ, e.Type)
		cols.status, cols.size = append(cols.status, int32(e.Status)), append(cols.size, e.Size)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit TO OFF`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (at, source, provider, outcome, reason, status, size, remote_addr, event_key, type)
			SELECT * FROM unnest(@at::timestamptz[], @source::text[], @provider::text[], @outcome::text[], @reason::text[],
				@status::integer[], @size::bigint[], @remote::text[], @key::text[], @type::text[])`,
			pgx.NamedArgs{"at": cols.at, "source": cols.source, "provider": cols.provider, "outcome": cols.outcome,
				"reason": cols.reason, "status": cols.status, "size": cols.size, "remote": cols.remote, "key": cols.key, "type": cols.typ}); err != nil {
			return err
		}
		if b.Age > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE at < @oldest`, pgx.NamedArgs{"oldest": s.opts.Now().Add(-b.Age).UTC()}); err != nil {
				return err
			}
		}
		if b.Size > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE id <= (SELECT id FROM `+table+` ORDER BY id DESC OFFSET @size LIMIT 1)`,
				pgx.NamedArgs{"size": b.Size}); err != nil {
				return err
			}
		}
		return nil
	})
	return s.wrap("append to the request log", err)
}

// ListRequests returns the entries f selects, newest first (by id, the
// order they were appended in).
func (s *Store) ListRequests(ctx context.Context, f dedupe.RequestFilter) ([]dedupe.LoggedRequest, string, error) {
	var after int64
	if f.After != "" {
		n, err := strconv.ParseInt(f.After, 10, 64)
		if err != nil || n <= 0 {
			return nil, "", fmt.Errorf("%w: request log cursor", dedupe.ErrInvalidCursor)
		}
		after = n
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, "", err
	}
	defer cancel()
	table, err := s.requests(ctx)
	if err != nil {
		return nil, "", err
	}
	limit := f.PageLimit()
	rows, err := s.pool.Query(ctx, `SELECT id, at, source, provider, outcome, reason, status, size, remote_addr, event_key, type
		FROM `+table+` WHERE (@after = 0 OR id < @after) AND (@source = '' OR source = @source)
		AND (@outcome = '' OR outcome = @outcome) AND (@reason = '' OR reason = @reason)
		ORDER BY id DESC LIMIT @limit`,
		pgx.NamedArgs{"after": after, "source": f.Source, "outcome": f.Outcome, "reason": f.Reason, "limit": limit + 1})
	if err != nil {
		return nil, "", s.wrap("list the request log", err)
	}
	defer rows.Close()
	var out []dedupe.LoggedRequest
	for rows.Next() {
		var e dedupe.LoggedRequest
		var id int64
		var status int32
		if err := rows.Scan(&id, &e.Time, &e.Source, &e.Provider, &e.Outcome, &e.Reason, &status, &e.Size,
			&e.RemoteAddr, &e.EventKey, &e.Type); err != nil {
			return nil, "", s.wrap("list the request log", err)
		}
		e.ID, e.Status = strconv.FormatInt(id, 10), int(status)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.wrap("list the request log", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}
