package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/webhookd/webhookd/dedupe"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxConns  = 10
	DefaultOpTimeout = 5 * time.Second
	// Table is the table every node shares.
	Table = "webhookd_records"
	// CountsTable holds the number of records in each state, kept by
	// triggers on Table, so that Stats reads a few rows instead of counting
	// the table.
	CountsTable = Table + "_counts"
	// countSlots spreads each state's count over this many rows, picked by
	// backend, so that concurrent writers rarely wait for one another's row
	// lock on the count.
	countSlots = 16
)

// countTriggers are the triggers that keep CountsTable.
var countTriggers = []string{Table + "_count_ins", Table + "_count_upd", Table + "_count_del", Table + "_count_trunc"}

// Options configure a Store: the options every backend has
// (dedupe.Options), and Postgres's own.
//
// Leases and expiries are decided by the database's clock
// (clock_timestamp(), read inside the statement that claims, finishes or
// prunes), so nodes whose clocks differ agree on them, and a lease runs from
// when its claim took effect, not from before a wait for a lock. Setting
// Options.Now replaces the database's clock with it (tests).
type Options struct {
	dedupe.Options
	// Schema holds the table; "" means the connection's search_path
	// (public by default). It is created if missing. Tests use one schema
	// each, so that they never see each other's keys.
	Schema string
	// MaxConns bounds the connection pool: a burst of deliveries waits for
	// a connection instead of exhausting the server's connection slots.
	MaxConns int32
	// OpTimeout bounds each store operation, waiting for a pool connection
	// included; an operation that runs out answers ErrUnavailable.
	OpTimeout time.Duration
	// Tracer, when set, sees every query the pool sends (pgx's hook for
	// query tracing, such as OpenTelemetry's, and for counting round
	// trips); nil traces nothing.
	Tracer pgx.QueryTracer
}

// Store is the dedupe store shared by every node through Postgres, with
// the same outcomes as Store: Postgres's row locks make each transition
// atomic across nodes. It is safe for concurrent use.
type Store struct {
	opts Options
	// dbClock: Options.Now was not set, and the database's clock decides.
	dbClock bool
	pool    *pgxpool.Pool
	table   string // quoted, schema-qualified
	counts  string // quoted, schema-qualified
	closed  atomic.Bool

	quit      chan struct{}
	prunerWG  sync.WaitGroup
	closeOnce sync.Once
}

// Open connects to the database at dsn and creates the schema and
// table if they are missing. It fails, wrapping ErrUnavailable, when the
// database cannot be reached.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	dbClock := opts.Now == nil
	opts.SetDefaults()
	if opts.Lease < 0 || opts.Retention < 0 || opts.AbandonAfter < 0 {
		return nil, errors.New("dedupe: negative lease, retention or abandon period")
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.OpTimeout <= 0 {
		opts.OpTimeout = DefaultOpTimeout
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors can quote the DSN, password included.
		return nil, ErrInvalidDSN
	}
	cfg.MaxConns = opts.MaxConns
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > opts.OpTimeout {
		cfg.ConnConfig.ConnectTimeout = opts.OpTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres: %v", dedupe.ErrUnavailable, err)
	}
	s := &Store{opts: opts, dbClock: dbClock, pool: pool, table: qualified(opts.Schema, Table),
		counts: qualified(opts.Schema, CountsTable), quit: make(chan struct{})}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if opts.PruneInterval > 0 {
		s.prunerWG.Add(1)
		go s.pruneLoop()
	}
	return s, nil
}

// qualified is name, quoted, in schema ("" for the search_path's).
func qualified(schema, name string) string {
	if schema == "" {
		return pgx.Identifier{name}.Sanitize()
	}
	return pgx.Identifier{schema, name}.Sanitize()
}

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
	var haveTable, haveIndex, haveCounts, haveRecent bool
	err := s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL,
		to_regclass($3) IS NOT NULL AND (SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = ANY($4)) = $5,
		to_regclass($6) IS NOT NULL`,
		s.table, idx.Sanitize(), s.counts, countTriggers, len(countTriggers), recent.Sanitize()).
		Scan(&haveTable, &haveIndex, &haveCounts, &haveRecent)
	if err != nil {
		return s.migrateError("look up table", err)
	}
	if haveTable && haveIndex && haveCounts && haveRecent {
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
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{failedIndex}.Sanitize() + ` ON ` + s.table + ` (created_at, key) WHERE state = 3`,
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
// Row triggers count an insert and a change of state (a takeover, 1 to 1,
// changes nothing and writes nothing); a statement trigger counts a DELETE
// from its transition table, one write per state however many rows a prune
// deleted. A transaction touches its slot's rows in state order, so two
// never wait for each other crosswise. The function runs as its owner
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
		`CREATE OR REPLACE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql
		SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
		DECLARE
			v_slot smallint := pg_backend_pid() % ` + fmt.Sprint(countSlots) + `;
		BEGIN
			IF TG_OP = 'TRUNCATE' THEN
				DELETE FROM ` + counts + `;
			ELSIF TG_OP = 'DELETE' THEN
				INSERT INTO ` + counts + ` AS c (state, slot, n)
					SELECT o.state, v_slot, -count(*) FROM old_rows o GROUP BY o.state ORDER BY o.state
					ON CONFLICT (state, slot) DO UPDATE SET n = c.n + excluded.n;
			ELSIF TG_OP = 'INSERT' THEN
				INSERT INTO ` + counts + ` AS c (state, slot, n) VALUES (NEW.state, v_slot, 1)
					ON CONFLICT (state, slot) DO UPDATE SET n = c.n + 1;
			ELSE
				INSERT INTO ` + counts + ` AS c (state, slot, n)
					SELECT v.state, v_slot, v.n FROM (VALUES (OLD.state, -1), (NEW.state, 1)) v (state, n) ORDER BY v.state
					ON CONFLICT (state, slot) DO UPDATE SET n = c.n + excluded.n;
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
			FOR EACH ROW EXECUTE FUNCTION `+fn+`()`,
		`CREATE TRIGGER `+pgx.Identifier{countTriggers[1]}.Sanitize()+` AFTER UPDATE OF state ON `+s.table+`
			FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION `+fn+`()`,
		`CREATE TRIGGER `+pgx.Identifier{countTriggers[2]}.Sanitize()+` AFTER DELETE ON `+s.table+`
			REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION `+fn+`()`,
		`CREATE TRIGGER `+pgx.Identifier{countTriggers[3]}.Sanitize()+` AFTER TRUNCATE ON `+s.table+`
			FOR EACH STATEMENT EXECUTE FUNCTION `+fn+`()`,
		`INSERT INTO `+counts+` (state, slot, n) SELECT state, 0, count(*) FROM `+s.table+` GROUP BY state`,
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

// Close stops the pruner and closes the pool. Calls made after it fail
// with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.quit)
		s.prunerWG.Wait()
		s.pool.Close()
	})
	return nil
}

// Lease returns the lease length claims are given.
func (s *Store) Lease() time.Duration { return s.opts.Lease }

// Now is the node's clock at Postgres's precision (microseconds). Only
// answers that decide nothing use it; see clock.
func (s *Store) Now() time.Time { return s.opts.Now().UTC().Truncate(time.Microsecond) }

// clock is the argument of sqlNow: nil, for the database's clock, unless
// Options.Now was set.
func (s *Store) clock() *time.Time {
	if s.dbClock {
		return nil
	}
	t := s.Now()
	return &t
}

// sqlNow is the time at which a statement takes effect, given clock() as
// parameter $n: clock_timestamp(), not now(), which is the transaction's
// start and would hide a wait for a lock.
func sqlNow(n int) string {
	return fmt.Sprintf("COALESCE($%d::timestamptz, clock_timestamp())", n)
}

// sqlMicros turns parameter $n, a number of microseconds, into an interval.
func sqlMicros(n int) string {
	return fmt.Sprintf("($%d::bigint * interval '1 microsecond')", n)
}

// op bounds one operation and refuses it once the store is closed.
func (s *Store) op(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if s.closed.Load() {
		return nil, nil, dedupe.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.OpTimeout)
	return ctx, cancel, nil
}

// pgError is a storage failure. Its message names the operation only: a
// driver error names hosts and users, and store errors reach logs and the
// admin tools. The cause is logged, and reachable with errors.Is/As.
type pgError struct {
	what  string
	cause error
}

func (e *pgError) Error() string {
	return dedupe.ErrUnavailable.Error() + ": postgres " + e.what + " failed"
}
func (e *pgError) Unwrap() []error { return []error{dedupe.ErrUnavailable, e.cause} }

// wrap turns a driver error into one wrapping ErrUnavailable (after
// logging it); this package's own outcomes pass through.
func (s *Store) wrap(what string, err error) error {
	if err == nil || dedupe.IsLogical(err) || errors.Is(err, dedupe.ErrClosed) {
		return err
	}
	if s.closed.Load() {
		return dedupe.ErrClosed
	}
	s.opts.Logger.Warn("dedupe: postgres operation failed", "op", what, "error", err.Error())
	return &pgError{what: what, cause: err}
}

// recordColumns read a whole record (scanRecord). replayColumns leave the
// request body out, which a replay does not send, and listColumns both
// bodies, which a listing does not show: each up to a mebibyte
// (dedupe.MaxStoredRequest) that would cross the wire and be copied for
// nothing. Their last column says whether a request body left out is
// stored whole (dedupe.Request.Unread); octet_length reads a TOASTed
// body's length from its header, not the body.
const (
	recordHead    = `key, state, token, lease_until, attempts, created_at, updated_at, expires_at, fingerprint, status, content_type, `
	reqUnread     = `COALESCE(octet_length(req_body) = req_size, false)`
	recordColumns = recordHead + `body, req_content_type, req_event_type, req_body, req_size, false`
	replayColumns = recordHead + `body, req_content_type, req_event_type, NULL::bytea, req_size, ` + reqUnread
	listColumns   = recordHead + `NULL::bytea, req_content_type, req_event_type, NULL::bytea, req_size, ` + reqUnread
)

// pgPingKey is Ping's key. Postgres text cannot hold pingKey's NUL byte;
// a control character keeps it apart from every delivery's key all the same.
const pgPingKey = "\x01ping"

// CheckKey adds Postgres's limits on text to dedupe.CheckKey's: valid UTF-8
// without NUL bytes.
func CheckKey(key string) error {
	if err := dedupe.CheckKey(key); err != nil {
		return err
	}
	if !utf8.ValidString(key) || strings.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("%w: not UTF-8 text without NUL bytes", dedupe.ErrInvalidKey)
	}
	return nil
}

// pgText makes s storable as Postgres text.
func pgText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// scanRecord scans recordColumns (or replayColumns, listColumns), then
// into extra any columns that follow.
func scanRecord(row pgx.Row, extra ...any) (dedupe.Record, error) {
	var (
		r          dedupe.Record
		state      int16
		token      int64
		leaseUntil *time.Time
		attempts   int32
		status     int32
		reqCT      *string
		reqType    *string
		reqBody    []byte
		reqSize    *int32
		reqUnread  bool
	)
	err := row.Scan(append([]any{&r.Key, &state, &token, &leaseUntil, &attempts, &r.CreatedAt, &r.UpdatedAt, &r.ExpiresAt,
		&r.Fingerprint, &status, &r.Response.ContentType, &r.Response.Body, &reqCT, &reqType, &reqBody, &reqSize, &reqUnread}, extra...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return dedupe.Record{}, dedupe.ErrNotFound
	}
	if err != nil {
		return dedupe.Record{}, err
	}
	r.State, r.Token, r.Attempts, r.Response.Status = dedupe.State(state), uint64(token), uint32(attempts), int(status)
	if leaseUntil != nil {
		r.LeaseUntil = leaseUntil.UTC()
	}
	r.CreatedAt, r.UpdatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC(), r.ExpiresAt.UTC()
	if len(r.Response.Body) == 0 {
		r.Response.Body = nil
	}
	if reqSize != nil {
		r.Request = &dedupe.Request{Size: int(*reqSize), Body: reqBody, Unread: reqUnread}
		if reqCT != nil {
			r.Request.ContentType = *reqCT
		}
		if reqType != nil {
			r.Request.EventType = *reqType
		}
		if len(r.Request.Body) == 0 && r.Request.Size > 0 {
			r.Request.Body = nil
		} else if r.Request.Body == nil && r.Request.Size == 0 {
			r.Request.Body = []byte{}
		}
	}
	return r, nil
}

// reqArgs are the request columns' values for req (all NULL when nil).
func reqArgs(req *dedupe.Request) []any {
	if req == nil {
		return []any{nil, nil, nil, nil}
	}
	return []any{pgText(req.ContentType), pgText(req.EventType), req.Body, int32(req.Size)}
}

// Claim has Store.Claim's outcomes. It reads the key first; an absent key
// or a passed lease is then claimed in one statement: an insert that, when
// the key exists, takes it over only if it is IN_FLIGHT with a passed lease
// and the same fingerprint. Postgres locks the row for the statement, so of
// concurrent claims on any nodes exactly one wins; the losers read the
// winner's row in the next round. The lease runs from the database's clock
// as the statement takes effect: after any wait for a lock, on the row or
// on the table, so that the wait is not taken out of the forward's time.
// req (may be nil) is kept in the row the statement inserts or takes over.
func (s *Store) Claim(ctx context.Context, key, fingerprint string, req *dedupe.Request) (dedupe.Lease, *dedupe.Record, error) {
	if err := CheckKey(key); err != nil {
		return dedupe.Lease{}, nil, err
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
	// $3 is the clock, $4 the lease and $5 the abandon period. The update
	// reads the clock afresh: it runs after the row lock it may wait for.
	// Its lease_until, updated_at and expires_at come from one reading.
	claim := `INSERT INTO ` + s.table + ` AS t (key, state, token, lease_until, attempts, created_at, updated_at, expires_at, fingerprint,
			req_content_type, req_event_type, req_body, req_size)
		SELECT $1, 1, $2, c.now + ` + sqlMicros(4) + `, 1, c.now, c.now, c.now + ` + sqlMicros(4) + ` + ` + sqlMicros(5) + `, $6, $7, $8, $9, $10
		FROM (SELECT ` + sqlNow(3) + ` AS now) c
		ON CONFLICT (key) DO UPDATE SET (state, token, lease_until, attempts, updated_at, expires_at,
				req_content_type, req_event_type, req_body, req_size) =
			(SELECT 1, excluded.token, c.now + ` + sqlMicros(4) + `, t.attempts + 1, c.now, c.now + ` + sqlMicros(4) + ` + ` + sqlMicros(5) + `,
				excluded.req_content_type, excluded.req_event_type, excluded.req_body, excluded.req_size
			FROM (SELECT ` + sqlNow(3) + ` AS now) c)
		WHERE t.state = 1 AND t.lease_until <= ` + sqlNow(3) + ` AND t.fingerprint = excluded.fingerprint
		RETURNING lease_until`
	// Read first, as Store.Claim does: a replay or an in-flight answer then
	// takes no row lock and writes no WAL; only an absent key or a passed
	// lease goes on to the claim. The row may appear, vanish (released,
	// pruned) or be taken over between the read and the claim; a few
	// rounds settle it. The read returns the clock the lease is judged by.
	get := `SELECT ` + replayColumns + `, ` + sqlNow(2) + ` FROM ` + s.table + ` WHERE key = $1`
	leaseMicros, abandonMicros := s.opts.Lease.Microseconds(), s.opts.AbandonAfter.Microseconds()
	for range 5 {
		var now time.Time
		rec, err := scanRecord(s.pool.QueryRow(ctx, get, key, s.clock()), &now)
		switch {
		case err == nil:
			if r, err := dedupe.Decide(&rec, fingerprint, now.UTC()); err != nil || r != nil {
				return dedupe.Lease{}, r, err
			}
		case !errors.Is(err, dedupe.ErrNotFound):
			return dedupe.Lease{}, nil, s.wrap("claim", err)
		}
		var until time.Time
		args := append([]any{key, int64(token), s.clock(), leaseMicros, abandonMicros, fingerprint}, reqArgs(req)...)
		err = s.pool.QueryRow(ctx, claim, args...).Scan(&until)
		if err == nil {
			return dedupe.Lease{Key: key, Token: token, Until: until.UTC()}, nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			s.abandonClaim(ctx, key, token)
			return dedupe.Lease{}, nil, s.wrap("claim", err)
		}
	}
	return dedupe.Lease{}, nil, fmt.Errorf("%w: key %q kept changing under the claim", dedupe.ErrUnavailable, key)
}

// abandonClaim deletes the claim of token on key, best effort, after the
// claim failed without an answer: the insert may have committed on the
// server all the same (the reply lost, the operation timed out), and then
// the key would answer 409 to every retry, for a lease, with nobody
// forwarding it. It runs on a fresh, short context, since ctx has usually
// run out. Only this claim's own row can match the token.
func (s *Store) abandonClaim(ctx context.Context, key string, token uint64) {
	if s.closed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.OpTimeout)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `DELETE FROM `+s.table+` WHERE key = $1 AND token = $2 AND state = 1`, key, int64(token)); err != nil {
		s.opts.Logger.Warn("dedupe: could not remove a claim that may have been recorded without an answer; the key answers 409 until its lease passes",
			"key", key, "error", err.Error())
	}
}

// Complete records a delivered event with the downstream's response. It
// takes effect even when ctx ends first (see settle).
func (s *Store) Complete(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	return s.finish(ctx, l, dedupe.Completed, resp)
}

// Fail records an event the downstream rejected permanently.
func (s *Store) Fail(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	return s.finish(ctx, l, dedupe.Failed, resp)
}

// finish is one statement, one round trip: the UPDATE checks the lease
// (state and token) and records the answer; no row means the lease was
// lost (taken over, released, deleted or finished already).
func (s *Store) finish(ctx context.Context, l dedupe.Lease, st dedupe.State, resp dedupe.Response) error {
	_, err := s.FinishRecord(ctx, l, st, resp)
	return err
}

// FinishRecord is Complete (st Completed) or Fail (st Failed), also
// returning the record as stored (without its request body, as a replay
// reads it), in the same one round trip, so that the tiered store copies
// it without reading it back. Any other st is refused:
// only a finished state may replace a lease.
func (s *Store) FinishRecord(ctx context.Context, l dedupe.Lease, st dedupe.State, resp dedupe.Response) (dedupe.Record, error) {
	if st != dedupe.Completed && st != dedupe.Failed {
		return dedupe.Record{}, fmt.Errorf("dedupe: postgres: cannot finish a record as %v", st)
	}
	if len(resp.Body) > dedupe.MaxStoredBody {
		resp.Body = resp.Body[:dedupe.MaxStoredBody]
	}
	var rec dedupe.Record
	err := s.settle(ctx, "finish", func(ctx context.Context) error {
		var err error
		// The token is a claim's (state $9) or a redrive's, whose answer
		// counts one more attempt (Redrive).
		rec, err = scanRecord(s.pool.QueryRow(ctx, `UPDATE `+s.table+` SET state = $3, token = 0, lease_until = NULL,
		attempts = CASE WHEN state = $9 THEN attempts ELSE attempts + 1 END,
		updated_at = c.now, expires_at = c.now + `+sqlMicros(5)+`, status = $6, content_type = $7, body = $8
		FROM (SELECT `+sqlNow(4)+` AS now) c
		WHERE key = $1 AND token = $2 AND token <> 0
		RETURNING `+replayColumns,
			l.Key, int64(l.Token), int16(st), s.clock(), s.opts.Retention.Microseconds(), int32(resp.Status), pgText(resp.ContentType), resp.Body,
			int16(dedupe.InFlight)))
		if errors.Is(err, dedupe.ErrNotFound) {
			return dedupe.ErrLeaseLost
		}
		return err
	})
	if err != nil {
		return dedupe.Record{}, err
	}
	return rec, nil
}

// settle runs fn, the statement that records how a claimed delivery ended
// (finish, release). Unlike a claim, such a write is worth making even
// after its caller has stopped waiting (the receiver bounds each store call
// by its store timeout): it only records what happened under a lease that
// the token in its WHERE clause still guards, so a late one that lost the
// lease matches no row (ErrLeaseLost) and touches no new owner. Skipped, it
// would leave the key IN_FLIGHT until the lease passes, and the provider's
// next delivery of an event the core service already has would be
// forwarded again. So fn runs on a context detached from ctx's
// cancellation, bounded by OpTimeout as any operation is; only the caller's
// wait ends with ctx, and then its error says the write may still take
// effect. A failure nobody waits for any more is logged by wrap.
//
// When the caller gives up first, the statement's OpTimeout starts again
// from then: the receiver's store timeout and OpTimeout are one setting, so
// a bound counted from the statement's start would run out with the caller
// and the write would be skipped after all.
func (s *Store) settle(ctx context.Context, what string, fn func(context.Context) error) error {
	if s.closed.Load() {
		return dedupe.ErrClosed
	}
	if ctx.Done() == nil {
		// Nothing can end the caller's wait early: no goroutine needed.
		wctx, cancel := context.WithTimeout(ctx, s.opts.OpTimeout)
		defer cancel()
		return s.wrap(what, fn(wctx))
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	bound := time.AfterFunc(s.opts.OpTimeout, cancel)
	done := make(chan error, 1)
	go func() {
		err := fn(wctx)
		bound.Stop()
		cancel()
		done <- s.wrap(what, err)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select {
		case err := <-done: // answered at the same moment: that stands
			return err
		default:
		}
		// Stop fails once the bound has run out (the statement is being
		// cancelled) or the statement has answered: nothing to extend.
		if bound.Stop() {
			bound.Reset(s.opts.OpTimeout)
		}
		return fmt.Errorf("dedupe: postgres: gave up waiting for the %s (the write may still take effect): %w", what, ctx.Err())
	}
}

// Release deletes the caller's IN_FLIGHT record, or drops a redrive's
// lease from the finished record it left as it was: one statement. Like
// Complete and Fail, it takes effect even when ctx ends first (see settle).
func (s *Store) Release(ctx context.Context, l dedupe.Lease) error {
	return s.settle(ctx, "release", func(ctx context.Context) error {
		var n int
		err := s.pool.QueryRow(ctx, `WITH
			claim AS (DELETE FROM `+s.table+` WHERE key = $1 AND token = $2 AND token <> 0 AND state = $3 RETURNING 1),
			redrive AS (UPDATE `+s.table+` SET token = 0, lease_until = NULL
				WHERE key = $1 AND token = $2 AND token <> 0 AND state <> $3 RETURNING 1)
			SELECT (SELECT count(*) FROM claim) + (SELECT count(*) FROM redrive)`,
			l.Key, int64(l.Token), int16(dedupe.InFlight)).Scan(&n)
		if err != nil {
			return err
		}
		if n == 0 {
			return dedupe.ErrLeaseLost
		}
		return nil
	})
}

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

// Get returns the record of key, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (dedupe.Record, error) {
	if err := CheckKey(key); err != nil {
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
	rec, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM `+s.table+` WHERE key = $1`, key))
	return rec, s.wrap("get", err)
}

// UpdatedAt returns when key's row last changed (the store's clock, in
// microseconds, at each claim, takeover and finish), or ErrNotFound: one
// indexed read of one column, which is how the tiered store checks that its
// local copy is still the shared record.
func (s *Store) UpdatedAt(ctx context.Context, key string) (time.Time, error) {
	if err := CheckKey(key); err != nil {
		return time.Time{}, err
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return time.Time{}, err
	}
	defer cancel()
	var at time.Time
	err = s.pool.QueryRow(ctx, `SELECT updated_at FROM `+s.table+` WHERE key = $1`, key).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, dedupe.ErrNotFound
	}
	return at.UTC(), s.wrap("check", err)
}

// List returns records in key order (bytewise, as Store does).
func (s *Store) List(ctx context.Context, o dedupe.ListOptions) ([]dedupe.Record, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	q := `SELECT ` + listColumns + ` FROM ` + s.table + `
		WHERE key > $1 AND starts_with(key, $2) AND ($3 = 0 OR state = $3) ORDER BY key`
	args := []any{o.After, o.Prefix, int16(o.State)}
	if o.Limit > 0 {
		q += ` LIMIT $4`
		args = append(args, o.Limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
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

// Ping proves the table can be written, for readiness probes: it inserts
// and deletes a key no delivery can have, in one transaction that is rolled
// back. A read-only database (a standby after a failover) fails it.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.wrap("ping", err)
	}
	defer func() {
		// The rollback outlives a cancelled ping, but not a dead server:
		// it gets a time limit of its own.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.OpTimeout)
		defer rcancel()
		_ = tx.Rollback(rctx) // the ping's outcome is decided
	}()
	now := s.Now()
	_, err = tx.Exec(ctx, `INSERT INTO `+s.table+` (key, state, created_at, updated_at, expires_at, fingerprint)
		VALUES ($1, 1, $2, $2, $2, '') ON CONFLICT (key) DO NOTHING`, pgPingKey, now)
	return s.wrap("ping", err)
}

// Prune deletes up to limit records whose ExpiresAt has passed and returns
// how many it deleted. Rows another node is pruning or claiming are
// skipped, not waited for.
func (s *Store) Prune(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM `+s.table+` WHERE key IN (
		SELECT key FROM `+s.table+` WHERE expires_at <= `+sqlNow(1)+` ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
		s.clock(), limit)
	if err != nil {
		return 0, s.wrap("prune", err)
	}
	n := int(tag.RowsAffected())
	if n > 0 && s.opts.OnPrune != nil {
		s.opts.OnPrune(n)
	}
	return n, nil
}

func (s *Store) pruneLoop() {
	defer s.prunerWG.Done()
	dedupe.RunPruner(s.quit, s.opts.PruneInterval, func(ctx context.Context) {
		dedupe.PruneBatches(ctx, s.opts.Logger, func(ctx context.Context) (int, bool, error) {
			n, err := s.Prune(ctx, s.opts.PruneBatch)
			return n, n == s.opts.PruneBatch, err
		})
	})
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
	args := []any{pgPingKey}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	where := `key <> $1`
	if o.Cursor != "" {
		// The cursor holds nanoseconds; Postgres keeps microseconds, so
		// the cursor of a row it returned compares equal to the row.
		where += ` AND (created_at, key) < (` + arg(cur.CreatedAt) + `::timestamptz, ` + arg(cur.Key) + `)`
	}
	switch {
	case o.State == dedupe.Failed:
		// Spelled out so that the planner uses the partial index (a
		// parameter would not match its predicate).
		where += ` AND state = 3`
	case o.State != 0:
		where += ` AND state = ` + arg(int16(o.State))
	}
	if o.Provider != "" {
		where += ` AND starts_with(key, ` + arg(o.Provider+":") + `)`
	}
	rows, err := s.pool.Query(ctx, `SELECT `+listColumns+` FROM `+s.table+` WHERE `+where+`
		ORDER BY created_at DESC, key DESC LIMIT `+arg(limit+1), args...)
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
