package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/webhookd/webhookd/dedupe"
)

// countTriggers are the triggers that keep CountsTable.
var countTriggers = []string{Table + "_count_ins", Table + "_count_upd", Table + "_count_del", Table + "_count_trunc"}

// migrate creates the schema, table and expiry index if missing, and the
// counts table with its triggers. When all exist it runs no DDL at all: Postgres checks CREATE privileges before IF
// NOT EXISTS, so a user granted only SELECT, INSERT, UPDATE and DELETE on a
// table an administrator created could not start otherwise. Nodes starting
// together would race on CREATE ... IF NOT EXISTS (it is not atomic in
// Postgres), so they take turns under an advisory lock.
func (s *Store) migrate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 4*s.opts.OpTimeout)
	defer cancel()
	idx := pgx.Identifier{Table + "_expires_at"}
	recent := pgx.Identifier{recentIndex}
	if s.opts.Schema != "" {
		idx = pgx.Identifier{s.opts.Schema, Table + "_expires_at"}
		recent = pgx.Identifier{s.opts.Schema, recentIndex}
	}
	var haveTable, haveIndex, haveCounts, haveRecent, haveQueue bool
	// The count triggers must all be there, and statement-level
	// (pg_trigger.tgtype's bit 0 marks a row trigger).
	err := s.pool.QueryRow(ctx, `SELECT to_regclass(@table) IS NOT NULL, to_regclass(@expires_index) IS NOT NULL,
		to_regclass(@counts) IS NOT NULL AND (SELECT count(*) FROM pg_trigger
			WHERE tgrelid = to_regclass(@table) AND tgname = ANY(@triggers) AND tgtype & 1 = 0) = @trigger_count,
		to_regclass(@recent_index) IS NOT NULL,
		to_regclass(@due_index) IS NOT NULL AND to_regclass(@depth) IS NOT NULL AND to_regclass(@pauses) IS NOT NULL`,
		pgx.NamedArgs{"table": s.table, "expires_index": idx.Sanitize(), "counts": s.counts, "triggers": countTriggers, "trigger_count": len(countTriggers),
			"recent_index": recent.Sanitize(), "due_index": qualified(s.opts.Schema, dueIndex), "depth": s.depth, "pauses": s.pauses}).
		Scan(&haveTable, &haveIndex, &haveCounts, &haveRecent, &haveQueue)
	if err != nil {
		return s.migrateError("look up table", err)
	}
	if haveTable && haveIndex && haveCounts && haveRecent && haveQueue {
		return nil
	}
	var missing []string
	if !haveTable {
		missing = append(missing, "table "+s.table)
	}
	if !haveIndex {
		missing = append(missing, "index "+idx.Sanitize())
	}
	if !haveCounts {
		missing = append(missing, "table "+s.counts+" with its triggers")
	}
	if !haveRecent {
		missing = append(missing, "the request columns and index "+recent.Sanitize())
	}
	if !haveQueue {
		missing = append(missing, "the queue's columns, indexes and tables "+s.depth+" and "+s.pauses)
	}
	return s.migrateError("create "+strings.Join(missing, " and "), pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('webhookd_records schema'))`); err != nil {
			return err
		}
		if s.opts.Schema != "" {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.opts.Schema}.Sanitize()); err != nil {
				return err
			}
		}
		// key is compared bytewise (COLLATE "C"), as LMDB orders keys, so
		// List pages alike on both stores.
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.table+` (
			key          text COLLATE "C" PRIMARY KEY,
			state        smallint    NOT NULL,
			token        bigint      NOT NULL DEFAULT 0,
			lease_until  timestamptz,
			attempts     integer     NOT NULL DEFAULT 0,
			created_at   timestamptz NOT NULL,
			updated_at   timestamptz NOT NULL,
			expires_at   timestamptz NOT NULL,
			fingerprint  text        NOT NULL,
			status       integer     NOT NULL DEFAULT 0,
			content_type text        NOT NULL DEFAULT '',
			body         bytea
		)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+pgx.Identifier{Table + "_expires_at"}.Sanitize()+` ON `+s.table+` (expires_at)`); err != nil {
			return err
		}
		if !haveRecent {
			if err := s.migrateRecent(ctx, tx); err != nil {
				return err
			}
		}
		if err := s.migrateQueue(ctx, tx); err != nil {
			return err
		}
		return s.migrateCounts(ctx, tx)
	}))
}

// recentIndex orders the records newest first for Recent; failedIndex is
// the same order for FAILED records only (a partial index, as small as the
// failures), so that the console's most common filter reads no other rows.
const (
	recentIndex = Table + "_created"
	failedIndex = Table + "_failed_created"
)

// failedPredicate is failedIndex's predicate. A query that means to use
// the index spells it out the same (a parameter would not match it).
var failedPredicate = fmt.Sprintf("state = %d", dedupe.Failed)

// migrateRecent adds the stored request's columns (req_size NULL: no
// request kept) and Recent's indexes to a table made before them. The
// request columns are NULL in existing rows, so the ALTER rewrites nothing.
func (s *Store) migrateRecent(ctx context.Context, tx pgx.Tx) error {
	for _, q := range []string{
		`ALTER TABLE ` + s.table + ` ADD COLUMN IF NOT EXISTS req_content_type text,
			ADD COLUMN IF NOT EXISTS req_event_type text,
			ADD COLUMN IF NOT EXISTS req_body bytea,
			ADD COLUMN IF NOT EXISTS req_size integer`,
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{recentIndex}.Sanitize() + ` ON ` + s.table + ` (created_at, key)`,
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{failedIndex}.Sanitize() + ` ON ` + s.table + ` (created_at, key) WHERE ` + failedPredicate,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// The queue's indexes (queue.go): dueIndex orders the QUEUED rows of each
// destination by their next attempt, waitingIndex the waiting ones (no
// attempt's lease) by arrival; both partial, as small as the queue.
const (
	dueIndex     = Table + "_due"
	waitingIndex = Table + "_waiting"
)

// waitingPredicate picks a waiting queued row (alias r): QUEUED, no
// attempt holding it. The depth triggers count these; a query meant to
// use waitingIndex spells its predicate out the same.
var waitingPredicate = fmt.Sprintf("r.state = %d AND r.token = 0", dedupe.Queued)

// migrateQueue adds the queued event's columns (NULL in existing rows, so
// the ALTER rewrites nothing), the due and waiting indexes, the pause
// flags' table and the depth table, which the count triggers keep
// (migrateCounts, run after it).
func (s *Store) migrateQueue(ctx context.Context, tx pgx.Tx) error {
	for _, q := range []string{
		`ALTER TABLE ` + s.table + ` ADD COLUMN IF NOT EXISTS destination text,
			ADD COLUMN IF NOT EXISTS queued_at timestamptz,
			ADD COLUMN IF NOT EXISTS next_attempt timestamptz,
			ADD COLUMN IF NOT EXISTS retries integer NOT NULL DEFAULT 0,
			ADD COLUMN IF NOT EXISTS reason text`,
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{dueIndex}.Sanitize() + ` ON ` + s.table + ` (destination, next_attempt)
			WHERE state = ` + fmt.Sprint(int(dedupe.Queued)),
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{waitingIndex}.Sanitize() + ` ON ` + s.table + ` (destination, queued_at)
			WHERE state = ` + fmt.Sprint(int(dedupe.Queued)) + ` AND token = 0`,
		`CREATE TABLE IF NOT EXISTS ` + s.pauses + ` (
			destination text PRIMARY KEY,
			since       timestamptz NOT NULL
		)`,
		`CREATE TABLE IF NOT EXISTS ` + s.depth + ` (
			destination text     NOT NULL,
			slot        smallint NOT NULL,
			n           bigint   NOT NULL,
			PRIMARY KEY (destination, slot)
		)`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// migrateCounts (re)creates the counts table and the triggers that keep
// it, and counts the table once to start from. The table is locked against
// writes first (SHARE ROW EXCLUSIVE, which CREATE TRIGGER takes anyway),
// so no write falls between the count and the triggers.
//
// The triggers are statement-level, counting from their transition
// tables: one counts write per state a statement changed, however many rows
// it touched, so that a writer's batch of claims or finishes (writer.go)
// pays once, not once a row. (Row triggers, one counts write per row, cost
// the figures in BENCHMARKS.md, "Postgres": BenchmarkWriterBatch's
// schema=row-count-triggers.) A schema made with row triggers is moved to
// these by migrate. A transaction touches its slot's rows in state order,
// so two never wait for each other crosswise. The function runs as its owner
// (SECURITY DEFINER), so a user granted only DML on the records table can
// write; Stats needs SELECT on the counts table.
func (s *Store) migrateCounts(ctx context.Context, tx pgx.Tx) error {
	schema := s.opts.Schema
	if schema == "" {
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return err
		}
	}
	counts := qualified(schema, CountsTable)
	depth := qualified(schema, DepthTable)
	fn := qualified(schema, Table+"_count")
	stmts := []string{
		`LOCK TABLE ` + s.table + ` IN SHARE ROW EXCLUSIVE MODE`,
		`CREATE TABLE IF NOT EXISTS ` + counts + ` (
			state smallint NOT NULL,
			slot  smallint NOT NULL,
			n     bigint   NOT NULL,
			PRIMARY KEY (state, slot)
		)`,
		`DELETE FROM ` + counts,
		`DELETE FROM ` + depth,
		`CREATE OR REPLACE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql
		SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
		DECLARE
			v_slot smallint := pg_backend_pid() % ` + fmt.Sprint(countSlots) + `;
		BEGIN
			IF TG_OP = 'TRUNCATE' THEN
				DELETE FROM ` + counts + `;
				DELETE FROM ` + depth + `;
				RETURN NULL;
			END IF;
			IF TG_OP = 'INSERT' THEN
				INSERT INTO ` + counts + ` AS c (state, slot, n)
					SELECT r.state, v_slot, count(*) FROM new_rows r GROUP BY r.state ORDER BY r.state
					ON CONFLICT (state, slot) DO UPDATE SET n = c.n + excluded.n;
				INSERT INTO ` + depth + ` AS c (destination, slot, n)
					SELECT r.destination, v_slot, count(*) FROM new_rows r WHERE ` + waitingPredicate + `
					GROUP BY r.destination ORDER BY r.destination
					ON CONFLICT (destination, slot) DO UPDATE SET n = c.n + excluded.n;
			ELSIF TG_OP = 'DELETE' THEN
				INSERT INTO ` + counts + ` AS c (state, slot, n)
					SELECT r.state, v_slot, -count(*) FROM old_rows r GROUP BY r.state ORDER BY r.state
					ON CONFLICT (state, slot) DO UPDATE SET n = c.n + excluded.n;
				INSERT INTO ` + depth + ` AS c (destination, slot, n)
					SELECT r.destination, v_slot, -count(*) FROM old_rows r WHERE ` + waitingPredicate + `
					GROUP BY r.destination ORDER BY r.destination
					ON CONFLICT (destination, slot) DO UPDATE SET n = c.n + excluded.n;
			ELSE
				-- A takeover or a redrive's 1 to 1 nets out to no write.
				INSERT INTO ` + counts + ` AS c (state, slot, n)
					SELECT d.state, v_slot, sum(d.n) FROM (
						SELECT r.state, -1 AS n FROM old_rows r
						UNION ALL
						SELECT r.state, 1 FROM new_rows r
					) d GROUP BY d.state HAVING sum(d.n) <> 0 ORDER BY d.state
					ON CONFLICT (state, slot) DO UPDATE SET n = c.n + excluded.n;
				INSERT INTO ` + depth + ` AS c (destination, slot, n)
					SELECT d.destination, v_slot, sum(d.n) FROM (
						SELECT r.destination, -1 AS n FROM old_rows r WHERE ` + waitingPredicate + `
						UNION ALL
						SELECT r.destination, 1 FROM new_rows r WHERE ` + waitingPredicate + `
					) d GROUP BY d.destination HAVING sum(d.n) <> 0 ORDER BY d.destination
					ON CONFLICT (destination, slot) DO UPDATE SET n = c.n + excluded.n;
			END IF;
			RETURN NULL;
		END
		$f$`,
	}
	for _, tg := range countTriggers {
		stmts = append(stmts, `DROP TRIGGER IF EXISTS `+pgx.Identifier{tg}.Sanitize()+` ON `+s.table)
	}
	stmts = append(stmts,
		`CREATE TRIGGER `+pgx.Identifier{countTriggers[0]}.Sanitize()+` AFTER INSERT ON `+s.table+`
			REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION `+fn+`()`,
		`CREATE TRIGGER `+pgx.Identifier{countTriggers[1]}.Sanitize()+` AFTER UPDATE ON `+s.table+`
			REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION `+fn+`()`,
		`CREATE TRIGGER `+pgx.Identifier{countTriggers[2]}.Sanitize()+` AFTER DELETE ON `+s.table+`
			REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION `+fn+`()`,
		`CREATE TRIGGER `+pgx.Identifier{countTriggers[3]}.Sanitize()+` AFTER TRUNCATE ON `+s.table+`
			FOR EACH STATEMENT EXECUTE FUNCTION `+fn+`()`,
		`INSERT INTO `+counts+` (state, slot, n) SELECT state, 0, count(*) FROM `+s.table+` GROUP BY state`,
		`INSERT INTO `+depth+` (destination, slot, n) SELECT r.destination, 0, count(*) FROM `+s.table+` r
			WHERE `+waitingPredicate+` GROUP BY r.destination`,
	)
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// migrateError reports a permission error as the configuration error it
// is, not as ErrUnavailable: retrying cannot fix it, an administrator must.
func (s *Store) migrateError(what string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgPermissionDenied {
		// The server's message names the object, never the host or user.
		return fmt.Errorf("dedupe: postgres: cannot %s: %s: have an administrator create it (see docs/store.md, Running several nodes) or grant this user CREATE on the schema", what, pgErr.Message)
	}
	return s.wrap(what, err)
}

// pgPermissionDenied is SQLSTATE insufficient_privilege.
const pgPermissionDenied = "42501"
