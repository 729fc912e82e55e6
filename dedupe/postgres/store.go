package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/webhookd/webhookd/dedupe"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxConns  = 10
	DefaultOpTimeout = 5 * time.Second
	DefaultWriters   = 2
	DefaultMaxBatch  = 256
	// Table is the table every node shares.
	Table = "webhookd_records"
	// CountsTable holds the number of records in each state, kept by
	// triggers on Table, so that Stats reads a few rows instead of counting
	// the table.
	CountsTable = Table + "_counts"
	// DepthTable holds the number of waiting queued events of each
	// destination, kept by the same triggers, so that a queue's depth is
	// read from a few rows instead of counting the queue.
	DepthTable = Table + "_depth"
	// PausesTable holds the paused destinations and since when (the pause
	// of store and forward), shared by every node.
	PausesTable = Table + "_pauses"
	// countSlots spreads each state's count over this many rows, picked by
	// backend, so that concurrent writers rarely wait for one another's row
	// lock on the count.
	countSlots = 16
)

// noSeqScan is the pool's enable_seqscan (a DSN that sets it wins). Every
// statement of the store finds its rows through an index (the key, the
// expiry, the created order, the counts' key), and a writer's statements
// are prepared once per connection (pgx caches them) and soon run on
// Postgres's generic plan. A generic plan made while the table was small,
// as every fresh table is, joins the batch's keys to a scan of the whole
// table, and keeps doing so as the table grows, until an ANALYZE happens
// to replace it: under webhookbench at 64 clients, thousands of such
// scans reading millions of rows a round, and three to four times the
// Postgres CPU per batch (BENCHMARKS.md, "Postgres (group commit)";
// TestPostgresWriterPlansUseIndexes). Off, the planner takes an index
// wherever one serves, whatever the table's size then. A DSN that sets
// enable_seqscan itself keeps its value.
const noSeqScan = "off"

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
	// Writers is how many batches of claims, finishes and releases may be
	// in flight at once (writer.go); each holds one pool connection while
	// it writes.
	Writers int
	// MaxBatch bounds how many ops one batch holds.
	MaxBatch int
	// OnCommit, if set, is called after each batch with its size and how
	// long it took (tests, benchmarks). It must not call back into the
	// store.
	OnCommit func(ops int, took time.Duration)
	// pipelineEach sends a batch's ops as one statement each, in the same
	// pipeline and transaction (BenchmarkWriterBatch's alternative).
	pipelineEach bool
	// noGather takes each batch as soon as a writer is free
	// (BenchmarkWriterBatch's alternative to gather).
	noGather bool
	// Tracer, when set, sees every query the pool sends (pgx's hook for
	// query tracing, such as OpenTelemetry's, and for counting round
	// trips); nil traces nothing. The writers' batches reach it only if it
	// is also a pgx.BatchTracer.
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
	depth   string // DepthTable, quoted, schema-qualified
	pauses  string // PausesTable, quoted, schema-qualified
	closed  atomic.Bool

	// The statements of a writer's batch, for this table.
	claimSQL, finishSQL, releaseSQL batchStatement
	enqueueSQL, settleAttemptSQL    batchStatement
	takeSQL                         string
	checkSQL                        string

	// checks wait for the reader (check.go).
	checks   chan *check
	readerWG sync.WaitGroup

	ops      chan *op
	sendMu   sync.RWMutex   // held to send, taken by Close to stop sends
	senders  sync.WaitGroup // sends under way, awaited by Close
	writerWG sync.WaitGroup
	queued   atomic.Int64  // ops sent and not yet taken into a batch
	commits  atomic.Uint64 // batches written
	writes   atomic.Uint64 // ops in them
	redone   atomic.Uint64 // batches rolled back and run again op by op

	// unsettled holds the answers being written again (retry.go).
	unsettled dedupe.Unsettled
	// abandons are claims to delete (retry.go), by one sweeper.
	abandons        chan claimRef
	abandonsDropped atomic.Int64
	abandonsDeleted atomic.Uint64 // deletes run (tests)
	sweepWG         sync.WaitGroup

	quit      chan struct{}
	prunerWG  sync.WaitGroup
	closeOnce sync.Once

	reqlog requestLog // requests.go
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
	if opts.Writers <= 0 {
		opts.Writers = DefaultWriters
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors can quote the DSN, password included.
		return nil, ErrInvalidDSN
	}
	cfg.MaxConns = opts.MaxConns
	if _, set := cfg.ConnConfig.RuntimeParams["enable_seqscan"]; !set {
		// A SET, not a startup parameter: a pooler such as PgBouncer
		// refuses startup parameters it does not know.
		cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, `SET enable_seqscan = `+noSeqScan)
			return err
		}
	}
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
		counts: qualified(opts.Schema, CountsTable), depth: qualified(opts.Schema, DepthTable), pauses: qualified(opts.Schema, PausesTable),
		quit: make(chan struct{}), ops: make(chan *op, opts.MaxBatch), abandons: make(chan claimRef, abandonQueue)}
	s.claimSQL = newBatchStatement(claimStatement(s.table))
	s.finishSQL = newBatchStatement(fmt.Sprintf(finishSQL, s.table, prefixColumns("r.", replayColumns)))
	s.releaseSQL = newBatchStatement(fmt.Sprintf(releaseSQL, s.table))
	s.enqueueSQL = newBatchStatement(fmt.Sprintf(enqueueSQL, s.table))
	s.takeSQL = fmt.Sprintf(takeSQL, s.table, prefixColumns("r.", recordColumns))
	s.settleAttemptSQL = newBatchStatement(fmt.Sprintf(settleAttemptSQL, s.table))
	s.checkSQL = fmt.Sprintf(checkSQL, s.table)
	s.checks = make(chan *check, opts.MaxBatch)
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	for range opts.Writers {
		s.writerWG.Add(1)
		go s.writeLoop()
	}
	s.readerWG.Add(1)
	go s.readLoop()
	s.sweepWG.Add(1)
	go s.sweepLoop()
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

// Close stops the pruner, lets the writers write what was handed to them,
// gives each answer still being retried one last attempt (retry.go), and
// closes the pool. Calls made after it fail with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.sendMu.Lock()
		s.closed.Store(true)
		s.sendMu.Unlock()
		s.senders.Wait()
		s.unsettled.Flush()
		close(s.quit)
		s.writerWG.Wait()
		s.readerWG.Wait()
		s.prunerWG.Wait()
		s.sweepWG.Wait()
		s.pool.Close()
	})
	return nil
}

// Lease returns the lease length claims are given.
func (s *Store) Lease() time.Duration { return s.opts.Lease }

// Now is the node's clock at Postgres's precision (microseconds). Only
// answers that decide nothing use it; see clock.
func (s *Store) Now() time.Time { return s.opts.Now().UTC().Truncate(time.Microsecond) }

// clock is the argument @now of sqlNow: nil, for the database's clock,
// unless Options.Now was set.
func (s *Store) clock() *time.Time {
	if s.dbClock {
		return nil
	}
	t := s.Now()
	return &t
}

// sqlNow is the time at which a statement takes effect, given clock() as
// the named argument @now: clock_timestamp(), not now(), which is the
// transaction's start and would hide a wait for a lock.
const sqlNow = `COALESCE(@now::timestamptz, clock_timestamp())`

// sqlMicros turns the named argument @name, a number of microseconds, into
// an interval.
func sqlMicros(name string) string {
	return "(@" + name + "::bigint * interval '1 microsecond')"
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
		VALUES (@key, @in_flight, @now, @now, @now, '') ON CONFLICT (key) DO NOTHING`,
		pgx.NamedArgs{"key": pgPingKey, "in_flight": int16(dedupe.InFlight), "now": now})
	return s.wrap("ping", err)
}
