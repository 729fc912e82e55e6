package lmdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// Defaults for Options fields left zero.
const (
	DefaultMapSize    = 256 << 20 // 256 MiB; grows on demand
	DefaultMaxMapSize = 1 << 40   // 1 TiB of address space, not of disk
	DefaultMaxReaders = 1024
	DefaultMaxBatch   = 256
)

// Options configure a Store: the options every backend has, and LMDB's
// own. The zero value of every field means its default.
type Options struct {
	dedupe.Options

	// MapSize is the initial LMDB map size in bytes. The map doubles when
	// LMDB reports it full, up to MaxMapSize.
	MapSize int64
	// MaxMapSize bounds map growth.
	MaxMapSize int64
	// MaxReaders is the number of LMDB reader slots, shared by every
	// process that opens the store. A Store lets at most three quarters of
	// them be used by its own read transactions at once (more readers wait
	// for a slot rather than fail), which leaves the rest to the other
	// processes: webhookd keys and webhookd backup beside webhookd serve.
	// The first process to open the environment sets the number; later
	// ones use it.
	MaxReaders int
	// MaxBatch bounds how many writes one commit holds. 1 disables group
	// commit: every write is its own durable transaction.
	MaxBatch int
	// NoSync skips the fsync of each commit: faster, not durable. Tests only.
	NoSync bool

	// OnCommit, if set, is called by the writer after each write
	// transaction with the number of writes it held and the time it took,
	// the sync to disk included, whether it committed or not. It runs on the
	// writer's goroutine, in the path of every write: it must be quick and
	// must not call back into the Store.
	OnCommit func(batch int, d time.Duration)

	// nestEveryOp runs every op of a batch in its own nested transaction,
	// the design writer.go explains it avoids: the benchmarks' baseline
	// (BenchmarkClaimComplete's mode=nested).
	nestEveryOp bool
}

func (o *Options) setDefaults() {
	o.Options.SetDefaults()
	if o.MapSize == 0 {
		o.MapSize = DefaultMapSize
	}
	if o.MaxMapSize == 0 {
		o.MaxMapSize = DefaultMaxMapSize
	}
	if o.MaxMapSize < o.MapSize {
		o.MaxMapSize = o.MapSize
	}
	if o.MaxReaders == 0 {
		o.MaxReaders = DefaultMaxReaders
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
}

// Store is the LMDB-backed dedupe store. It is safe for concurrent use.
// Several processes may open the same directory (webhookd keys beside
// webhookd serve): LMDB serialises their writers with a file lock.
type Store struct {
	opts    Options
	logger  *slog.Logger
	env     *mdb.Env
	records mdb.DBI
	expiry  mdb.DBI
	created mdb.DBI
	meta    mdb.DBI

	// readers bounds this process's open read transactions, so that a
	// burst of deliveries waits for a reader slot instead of failing with
	// MDB_READERS_FULL.
	readers chan struct{}

	// mu is held shared by every transaction and exclusively to resize the
	// map or close the environment, which LMDB allows only while this
	// process has no transaction open.
	mu      sync.RWMutex
	closed  bool
	mapSize int64

	ops       chan *op
	queued    atomic.Int64 // callers in write that the writer has not received yet
	quit      chan struct{}
	writerWG  sync.WaitGroup
	prunerWG  sync.WaitGroup
	closeOnce sync.Once

	commits atomic.Uint64 // transactions the writer ran
	writes  atomic.Uint64 // ops they held
	// redone counts batches run a second time with each op in its own
	// nested transaction, after one op failed in the plain run (writer.go).
	redone atomic.Uint64
	// inBatch is set while the writer runs a batch, whose counts entry
	// is kept in batch until flushCounts writes it (count).
	inBatch bool
	batch   batchCounts
	// changes counts the writes ops ask LMDB for (putKV, delKV, delCur,
	// count): the writer compares it around an op to know whether a failed
	// op changed anything. Writer goroutine (and Open, before it starts)
	// only.
	changes uint64

	// wkey and wval are scratch buffers for the writer goroutine's ops;
	// wcounts is the counts entry's (count).
	wkey, wval []byte
	wcounts    [8 * len(stateCounts{})]byte
	// opPool holds answered ops for reuse (write): two fewer allocations
	// (the op and its channel) per write.
	opPool sync.Pool

	// commitHook, when set, runs after a batch's ops and before its
	// commit; an error aborts the transaction as a failed commit would.
	// Tests use it to prove what a failed commit answers and leaves
	// behind, and that nobody is answered before the commit.
	commitHook atomic.Pointer[func() error]
}

// Open opens (creating if needed) the store in dir. It refuses, with an
// error wrapping ErrDamaged, a data file shorter than its header says, an
// empty one, and a missing one in a directory that held a store (Open
// leaves a marker file beside data.mdb to know).
func Open(dir string, opts Options) (*Store, error) {
	opts.setDefaults()
	if opts.Lease < 0 || opts.Retention < 0 || opts.AbandonAfter < 0 {
		return nil, errors.New("dedupe: negative lease, retention or abandon period")
	}
	if opts.MapSize < 0 || opts.MaxReaders < 0 {
		return nil, errors.New("dedupe: negative map size or reader count")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("dedupe: create data dir: %w", err)
	}
	// Before LMDB maps the file: a truncated one is mapped without complaint
	// and kills the process with SIGBUS at the first read past its end.
	if _, err := verifyFile(dir); err != nil {
		return nil, err
	}
	env, err := mdb.NewEnv()
	if err != nil {
		return nil, fmt.Errorf("dedupe: %w", err)
	}
	s := &Store{opts: opts, logger: opts.Logger, env: env, mapSize: opts.MapSize, ops: make(chan *op), quit: make(chan struct{})}
	if err := s.open(dir); err != nil {
		env.Close()
		return nil, err
	}
	// From now on a missing or empty data.mdb here is damage, not a new
	// store (verifyFile).
	if err := writeMarker(dir); err != nil {
		env.Close()
		return nil, err
	}
	s.writerWG.Add(1)
	go s.writeLoop()
	if opts.PruneInterval > 0 {
		s.prunerWG.Add(1)
		go s.pruneLoop()
	}
	return s, nil
}

func (s *Store) open(dir string) error {
	if err := s.env.SetMaxDBs(maxDBs); err != nil {
		return fmt.Errorf("dedupe: %w", err)
	}
	// Reader slots must be sized before Open; LMDB cannot change them later.
	if err := s.env.SetMaxReaders(s.opts.MaxReaders); err != nil {
		return fmt.Errorf("dedupe: %w", err)
	}
	if err := s.env.SetMapSize(s.opts.MapSize); err != nil {
		return fmt.Errorf("dedupe: %w", err)
	}
	var flags uint
	if s.opts.NoSync {
		flags |= mdb.NoSync
	}
	if err := s.env.Open(dir, flags, 0o640); err != nil {
		return fmt.Errorf("dedupe: open %s: %w", dir, err)
	}
	// A process that crashed with a read transaction open leaves its reader
	// slot behind; stale slots pin old pages and stop page reuse.
	if n, err := s.env.ReaderCheck(); err != nil {
		return fmt.Errorf("dedupe: reader check: %w", err)
	} else if n > 0 {
		s.logger.Info("dedupe: cleared reader slots left by dead processes", "slots", n)
	}
	if err := s.adoptRecordedMapSize(); err != nil {
		return err
	}
	maxReaders, err := s.env.MaxReaders()
	if err != nil {
		return fmt.Errorf("dedupe: %w", err)
	}
	s.readers = make(chan struct{}, max(1, maxReaders*3/4))
	return s.env.Update(func(txn *mdb.Txn) error {
		var err error
		if s.records, err = txn.OpenDBI(dbiRecords, mdb.Create); err != nil {
			return fmt.Errorf("dedupe: open %s: %w", dbiRecords, err)
		}
		if s.expiry, err = txn.OpenDBI(dbiExpiry, mdb.Create); err != nil {
			return fmt.Errorf("dedupe: open %s: %w", dbiExpiry, err)
		}
		if s.meta, err = txn.OpenDBI(dbiMeta, mdb.Create); err != nil {
			return fmt.Errorf("dedupe: open %s: %w", dbiMeta, err)
		}
		if s.created, err = txn.OpenDBI(dbiCreated, mdb.Create); err != nil {
			return fmt.Errorf("dedupe: open %s: %w", dbiCreated, err)
		}
		if err := s.openCreated(txn); err != nil {
			return err
		}
		return s.openCounts(txn)
	})
}

// Close stops the writer and the pruner and closes the environment. Writes
// that are queued when Close is called fail with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.quit)
		s.writerWG.Wait()
		s.prunerWG.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed = true
		s.env.Close()
	})
	return nil
}

// Lease returns the lease length claims are given.
func (s *Store) Lease() time.Duration { return s.opts.Lease }

// Claim tries to take key for one delivery attempt. Its outcomes:
//
//   - (lease, nil, nil): the caller owns the key until lease.Until and must
//     Complete, Fail or Release it.
//   - (Lease{}, rec, nil): the key is COMPLETED or FAILED; rec holds the
//     stored response to replay.
//   - (Lease{}, rec, ErrInFlight): another attempt holds the key until
//     rec.LeaseUntil.
//   - ErrFingerprintMismatch (with rec), ErrInvalidKey, ErrUnavailable,
//     ErrClosed.
//
// A key that is absent, or IN_FLIGHT with an expired lease, is claimed in one
// atomic write transaction.
func (s *Store) Claim(ctx context.Context, key, fingerprint string) (dedupe.Lease, *dedupe.Record, error) {
	return s.ClaimRequest(ctx, key, fingerprint, nil)
}

// ClaimRequest is Claim keeping req in the record the claim writes, in the
// same transaction.
func (s *Store) ClaimRequest(ctx context.Context, key, fingerprint string, req *dedupe.Request) (dedupe.Lease, *dedupe.Record, error) {
	if err := dedupe.CheckKey(key); err != nil {
		return dedupe.Lease{}, nil, err
	}
	// Fast path: duplicates of a finished or running event are answered
	// from a read transaction, without queueing for the writer.
	rec, err := s.Get(ctx, key)
	switch {
	case errors.Is(err, dedupe.ErrNotFound):
	case err != nil:
		return dedupe.Lease{}, nil, err
	default:
		if r, err := dedupe.Decide(&rec, fingerprint, s.opts.Now()); err != nil || r != nil {
			return dedupe.Lease{}, r, err
		}
	}

	token, err := dedupe.NewToken()
	if err != nil {
		return dedupe.Lease{}, nil, err
	}
	var (
		lease dedupe.Lease
		found *dedupe.Record
	)
	err = s.update(ctx, func(txn *mdb.Txn) error {
		lease, found = dedupe.Lease{}, nil // the op may run twice (writer.go)
		now := s.opts.Now()
		cur, err := s.get(txn, key)
		var attempts uint32
		created := now
		switch {
		case errors.Is(err, dedupe.ErrNotFound):
		case err != nil:
			return err
		default:
			if r, err := dedupe.Decide(&cur, fingerprint, now); err != nil || r != nil {
				found = r
				return err
			}
			attempts, created = cur.Attempts, cur.CreatedAt
			if err := s.unindex(txn, &cur); err != nil {
				return err
			}
		}
		rec := dedupe.Record{
			Key: key, State: dedupe.InFlight, Token: token,
			LeaseUntil: now.Add(s.opts.Lease), Attempts: attempts + 1,
			CreatedAt: created, UpdatedAt: now, Fingerprint: fingerprint, Request: req,
		}
		rec.ExpiresAt = rec.LeaseUntil.Add(s.opts.AbandonAfter)
		if err := s.put(txn, &rec); err != nil {
			return err
		}
		lease = dedupe.Lease{Key: key, Token: token, Until: rec.LeaseUntil}
		return nil
	})
	if err != nil {
		if !dedupe.IsLogical(err) {
			// The caller may have given up while the op still runs
			// (writer.go): found is the op's until it has answered, and
			// only an answer from the op is a logical outcome.
			return dedupe.Lease{}, nil, err
		}
		return dedupe.Lease{}, found, err
	}
	return lease, found, nil
}

// Complete records a delivered event with the downstream's response.
func (s *Store) Complete(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	return s.finish(ctx, l, dedupe.Completed, resp)
}

// Fail records an event the downstream rejected permanently, with its
// response, so that later deliveries replay the rejection.
func (s *Store) Fail(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	return s.finish(ctx, l, dedupe.Failed, resp)
}

func (s *Store) finish(ctx context.Context, l dedupe.Lease, st dedupe.State, resp dedupe.Response) error {
	if len(resp.Body) > dedupe.MaxStoredBody {
		resp.Body = resp.Body[:dedupe.MaxStoredBody]
	}
	return s.settle(ctx, func(txn *mdb.Txn) error {
		cur, err := s.owned(txn, l)
		if err != nil {
			return err
		}
		if err := s.unindex(txn, &cur); err != nil {
			return err
		}
		now := s.opts.Now()
		cur.State, cur.Token, cur.LeaseUntil = st, 0, time.Time{}
		cur.UpdatedAt, cur.ExpiresAt = now, now.Add(s.opts.Retention)
		cur.Response = resp
		return s.put(txn, &cur)
	})
}

// Release deletes the caller's IN_FLIGHT record so that the provider's next
// delivery of the event is forwarded afresh.
func (s *Store) Release(ctx context.Context, l dedupe.Lease) error {
	return s.settle(ctx, func(txn *mdb.Txn) error {
		cur, err := s.owned(txn, l)
		if err != nil {
			return err
		}
		return s.del(txn, &cur)
	})
}

// Delete removes key so that the next delivery of the event is forwarded
// again (an operator's override). It refuses, with ErrInFlight, a key whose
// lease is still running: deleting a live claim would let the provider's
// next retry be forwarded while the first forward is still under way. The
// check and the delete are one transaction.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.delete(ctx, key, false)
}

// ForceDelete removes key whatever its state, a live claim or a record that
// no longer decodes included.
func (s *Store) ForceDelete(ctx context.Context, key string) error {
	return s.delete(ctx, key, true)
}

func (s *Store) delete(ctx context.Context, key string, force bool) error {
	if err := dedupe.CheckKey(key); err != nil {
		return err
	}
	return s.update(ctx, func(txn *mdb.Txn) error {
		cur, err := s.get(txn, key)
		switch {
		case errors.Is(err, dedupe.ErrCorrupt) && force:
			// Its index entry cannot be found without the record; the
			// pruner drops index entries whose record is gone. Nor can
			// it say what it was counted as.
			if err := s.delKV(txn, s.records, []byte(key)); err != nil {
				return err
			}
			return s.recount(txn)
		case err != nil:
			return err
		case !force && cur.State == dedupe.InFlight && s.opts.Now().Before(cur.LeaseUntil):
			return fmt.Errorf("%w: lease runs until %s", dedupe.ErrInFlight, cur.LeaseUntil.Format(time.RFC3339))
		}
		return s.del(txn, &cur)
	})
}

// owned returns the record of l's key if l still owns it.
func (s *Store) owned(txn *mdb.Txn, l dedupe.Lease) (dedupe.Record, error) {
	cur, err := s.get(txn, l.Key)
	if errors.Is(err, dedupe.ErrNotFound) {
		return dedupe.Record{}, dedupe.ErrLeaseLost
	}
	if err != nil {
		return dedupe.Record{}, err
	}
	if cur.State != dedupe.InFlight || cur.Token != l.Token {
		return dedupe.Record{}, dedupe.ErrLeaseLost
	}
	return cur, nil
}

// Keep writes rec, a finished record copied from another store (the
// tiered store's shared one), as it is, unless the key holds a live claim
// of this store's own.
func (s *Store) Keep(ctx context.Context, rec dedupe.Record) error {
	if err := dedupe.CheckKey(rec.Key); err != nil {
		return err
	}
	return s.write(ctx, func(txn *mdb.Txn) error {
		cur, err := s.get(txn, rec.Key)
		switch {
		case errors.Is(err, dedupe.ErrNotFound):
		case errors.Is(err, dedupe.ErrCorrupt):
			// What it replaces cannot say what it was counted as.
			if err := s.put(txn, &rec); err != nil {
				return err
			}
			return s.recount(txn)
		case err != nil:
			return err
		default:
			if cur.State == dedupe.InFlight && s.opts.Now().Before(cur.LeaseUntil) {
				return nil
			}
			if err := s.unindex(txn, &cur); err != nil {
				return err
			}
		}
		return s.put(txn, &rec)
	})
}

// Logger returns the logger the store reports its rare events to, so that
// a store built over this one (tiered) reports to the same place.
func (s *Store) Logger() *slog.Logger { return s.logger }

// Get returns the record of key, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (dedupe.Record, error) {
	if err := dedupe.CheckKey(key); err != nil {
		return dedupe.Record{}, err
	}
	var rec dedupe.Record
	err := s.view(func(txn *mdb.Txn) error {
		var err error
		rec, err = s.get(txn, key)
		return err
	})
	return rec, err
}

// List returns records in key order.
func (s *Store) List(ctx context.Context, o dedupe.ListOptions) ([]dedupe.Record, error) {
	var out []dedupe.Record
	err := s.view(func(txn *mdb.Txn) (err error) {
		// A value LMDB cannot hand over panics in cur.Get, before its key
		// is known: name the record by the last key read.
		last := ""
		defer recoverCorrupt(&err, func() string { return afterKey(last) })
		cur, err := txn.OpenCursor(s.records)
		if err != nil {
			return err
		}
		defer cur.Close()
		start := o.Prefix
		if o.After > start {
			start = o.After
		}
		var k, v []byte
		if start == "" {
			k, v, err = cur.Get(nil, nil, mdb.First)
		} else {
			k, v, err = cur.Get([]byte(start), nil, mdb.SetRange)
		}
		for ; err == nil; k, v, err = cur.Get(nil, nil, mdb.Next) {
			key := string(k)
			last = key
			if key == o.After {
				continue
			}
			if !strings.HasPrefix(key, o.Prefix) {
				break
			}
			rec, derr := decodeRecord(key, v)
			if derr != nil {
				return derr
			}
			if o.State != 0 && rec.State != o.State {
				continue
			}
			out = append(out, rec)
			if o.Limit > 0 && len(out) >= o.Limit {
				return ctx.Err()
			}
		}
		if mdb.IsNotFound(err) {
			return nil
		}
		return err
	})
	return out, err
}

// Stats returns the number of records in each state. It reads the counts
// every write keeps beside the records (counts.go), not the records.
func (s *Store) Stats(ctx context.Context) (map[dedupe.State]int, error) {
	var counts map[dedupe.State]int
	err := s.view(func(txn *mdb.Txn) error {
		c, found, err := readCounts(txn, s.meta)
		if err != nil {
			return err
		}
		if !found {
			// Open writes the entry and no write removes it.
			return fmt.Errorf("%w: the record counts are missing", dedupe.ErrCorrupt)
		}
		counts = c.stats()
		return nil
	})
	return counts, err
}

// pingKey is written and deleted by Ping. No store key can equal it:
// checkKey takes any bytes, but the receiver refuses control characters.
var pingKey = []byte("\x00ping")

// Ping proves the store can be read and durably written, for readiness
// probes. It writes a key into both DBIs and deletes it again in one
// transaction: nothing changes, but the commit has as many pages to write
// as the claim of a new key (a transaction that changes nothing commits
// without touching the disk), so a disk too full or too broken to take a
// claim fails Ping too.
func (s *Store) Ping(ctx context.Context) error {
	return s.update(ctx, func(txn *mdb.Txn) error {
		for _, dbi := range []mdb.DBI{s.records, s.expiry} {
			if err := s.putKV(txn, dbi, pingKey, nil); err != nil {
				return err
			}
			if err := s.delKV(txn, dbi, pingKey); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) get(txn *mdb.Txn, key string) (_ dedupe.Record, err error) {
	defer recoverCorrupt(&err, func() string { return fmt.Sprintf("key %q", key) })
	// The value is read in place, not copied out of the map first:
	// decodeRecord copies what it keeps, and nothing writes in between
	// (a copy would be 199 of the 1,380 bytes the store allocates per
	// webhook, BenchmarkClaimComplete -benchmem). A length damaged on disk
	// is still caught: beyond what lmdb-go can
	// slice it panics (recoverCorrupt), and within it the record's own
	// field lengths leave bytes over, which decodeRecord refuses, without
	// reading them.
	raw := txn.RawRead
	txn.RawRead = true
	defer func() { txn.RawRead = raw }() // also after a panic: the writer's transaction goes on
	v, err := txn.Get(s.records, []byte(key))
	if mdb.IsNotFound(err) {
		return dedupe.Record{}, dedupe.ErrNotFound
	}
	if err != nil {
		return dedupe.Record{}, err
	}
	return decodeRecord(key, v)
}

// put, unindex and del run inside writer ops only, so they may share the
// writer's scratch buffers; LMDB copies keys and values as it writes them.
// put counts rec in its state; unindex uncounts it, since every caller
// unindexes a record to replace or delete it.
func (s *Store) put(txn *mdb.Txn, rec *dedupe.Record) error {
	if err := s.count(txn, rec.State, 1); err != nil {
		return err
	}
	s.wval = encodeRecord(s.wval[:0], rec)
	s.wkey = append(s.wkey[:0], rec.Key...)
	if err := s.putKV(txn, s.records, s.wkey, s.wval); err != nil {
		return err
	}
	s.wkey = createdKey(s.wkey[:0], rec.CreatedAt, rec.Key)
	if err := s.putKV(txn, s.created, s.wkey, []byte{byte(rec.State)}); err != nil {
		return err
	}
	s.wkey = expiryKey(s.wkey[:0], rec.ExpiresAt, rec.Key)
	return s.putKV(txn, s.expiry, s.wkey, nil)
}

func (s *Store) unindex(txn *mdb.Txn, rec *dedupe.Record) error {
	if err := s.count(txn, rec.State, -1); err != nil {
		return err
	}
	if err := s.uncreate(txn, rec); err != nil {
		return err
	}
	s.wkey = expiryKey(s.wkey[:0], rec.ExpiresAt, rec.Key)
	err := s.delKV(txn, s.expiry, s.wkey)
	if mdb.IsNotFound(err) {
		return nil
	}
	return err
}

// uncreate deletes rec's entry in the creation-time index.
func (s *Store) uncreate(txn *mdb.Txn, rec *dedupe.Record) error {
	s.wkey = createdKey(s.wkey[:0], rec.CreatedAt, rec.Key)
	err := s.delKV(txn, s.created, s.wkey)
	if mdb.IsNotFound(err) {
		return nil
	}
	return err
}

func (s *Store) del(txn *mdb.Txn, rec *dedupe.Record) error {
	if err := s.unindex(txn, rec); err != nil {
		return err
	}
	return s.delKV(txn, s.records, []byte(rec.Key))
}

// putKV, delKV and delCur are the only ways this package writes to LMDB
// (TestEveryWriteIsCounted): each counts the write in s.changes, which
// tells the writer whether an op that failed had changed anything before
// it did (writer.go).
func (s *Store) putKV(txn *mdb.Txn, dbi mdb.DBI, k, v []byte) error {
	s.changes++
	return txn.Put(dbi, k, v, 0)
}

func (s *Store) delKV(txn *mdb.Txn, dbi mdb.DBI, k []byte) error {
	s.changes++
	return txn.Del(dbi, k, nil)
}

func (s *Store) delCur(cur *mdb.Cursor) error {
	s.changes++
	return cur.Del(0)
}

// view runs fn in a read transaction. A panic inside fn is an unreadable
// record (recoverCorrupt), and the transaction ends as for any error.
func (s *Store) view(fn mdb.TxnOp) error {
	return s.read(func() error { return s.env.View(guardTxn(fn)) })
}

// update runs fn as one op of the writer (writer.go), with the same guard
// as view: a panic in the writer's goroutine would end the process.
func (s *Store) update(ctx context.Context, fn mdb.TxnOp) error {
	return s.write(ctx, guardTxn(fn))
}

// guardTxn makes a panic in fn its error, so that the transaction is
// aborted normally and the caller hears ErrCorrupt.
func guardTxn(fn mdb.TxnOp) mdb.TxnOp {
	return func(txn *mdb.Txn) (err error) {
		defer recoverCorrupt(&err, func() string { return "reading the store" })
		return fn(txn)
	}
}

// recoverCorrupt, deferred, turns a panic into an error wrapping
// ErrCorrupt, what() naming the record. LMDB trusts the lengths it finds on
// its pages (it keeps no checksums), and lmdb-go panics when one is out of
// range as it copies the value ("gobytes: length out of range"): damage on
// disk, to be answered as an error for that key, not a crash.
func recoverCorrupt(err *error, what func() string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %s: %v", dedupe.ErrCorrupt, what(), r)
	}
}

// afterKey names the record that follows key in a cursor walk.
func afterKey(key string) string {
	if key == "" {
		return "the first record"
	}
	return fmt.Sprintf("the record after key %q", key)
}

// read runs fn, which opens one read transaction, holding a reader slot
// and the map (a resize waits for it), and retries it when another process
// has grown the map meanwhile.
func (s *Store) read(fn func() error) error {
	s.readers <- struct{}{}
	defer func() { <-s.readers }()
	for attempt := 0; ; attempt++ {
		err := s.readOnce(fn)
		if isErrno(err, mdb.MapResized) && attempt < 3 {
			if rerr := s.adoptMapSize(); rerr != nil {
				return rerr
			}
			continue
		}
		return err
	}
}

// readOnce runs fn holding s.mu shared. The unlock is deferred: fn may
// panic, and a lock left held would make Close and every resize wait
// forever.
func (s *Store) readOnce(fn func() error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return dedupe.ErrClosed
	}
	return fn()
}
