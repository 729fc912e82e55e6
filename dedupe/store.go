package dedupe

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/PowerDNS/lmdb-go/lmdb"
)

// Defaults for Options fields left zero.
const (
	DefaultLease         = 60 * time.Second
	DefaultRetention     = 168 * time.Hour
	DefaultAbandonAfter  = time.Hour
	DefaultMapSize       = 256 << 20 // 256 MiB; grows on demand
	DefaultMaxMapSize    = 1 << 40   // 1 TiB of address space, not of disk
	DefaultMaxReaders    = 1024
	DefaultMaxBatch      = 256
	DefaultPruneInterval = time.Minute
	DefaultPruneBatch    = 1000
)

// Options configure a Store. The zero value of every field means its default.
type Options struct {
	// Lease is how long a claim is honoured before another attempt may take
	// the key over.
	Lease time.Duration
	// Retention is how long COMPLETED and FAILED records are kept.
	Retention time.Duration
	// AbandonAfter is how long an IN_FLIGHT record is kept past its lease
	// before the pruner deletes it (its key is reclaimable long before).
	AbandonAfter time.Duration
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
	// PruneInterval is how often the background pruner runs (it also
	// frees reader slots left by dead processes); negative disables it.
	PruneInterval time.Duration
	// PruneBatch bounds the deletions of one pruning transaction, so that
	// pruning never holds the writer long.
	PruneBatch int
	// NoSync skips the fsync of each commit: faster, not durable. Tests only.
	NoSync bool
	// Now is the clock; time.Now if nil.
	Now func() time.Time

	// OnCommit, if set, is called by the writer after each write
	// transaction with the number of writes it held and the time it took,
	// the sync to disk included, whether it committed or not. It runs on the
	// writer's goroutine, in the path of every write: it must be quick and
	// must not call back into the Store.
	OnCommit func(batch int, d time.Duration)
	// OnPrune, if set, is called after each pruning transaction that
	// deleted records, with how many it deleted. Like OnCommit it must not
	// call back into the Store.
	OnPrune func(n int)
	// Logger receives the pruner's and the map's rare events (a failed
	// pruning pass, a grown map, reader slots cleared); nil discards them.
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Lease, DefaultLease)
	def(&o.Retention, DefaultRetention)
	def(&o.AbandonAfter, DefaultAbandonAfter)
	def(&o.PruneInterval, DefaultPruneInterval)
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
	if o.PruneBatch <= 0 {
		o.PruneBatch = DefaultPruneBatch
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Store is the LMDB-backed dedupe store. It is safe for concurrent use.
// Several processes may open the same directory (webhookd keys beside
// webhookd serve): LMDB serialises their writers with a file lock.
type Store struct {
	opts    Options
	logger  *slog.Logger
	env     *lmdb.Env
	records lmdb.DBI
	expiry  lmdb.DBI

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

	// wkey and wval are scratch buffers for the writer goroutine's ops.
	wkey, wval []byte

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
	env, err := lmdb.NewEnv()
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
	if err := s.env.SetMaxDBs(2); err != nil {
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
		flags |= lmdb.NoSync
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
	return s.env.Update(func(txn *lmdb.Txn) error {
		var err error
		if s.records, err = txn.OpenDBI(dbiRecords, lmdb.Create); err != nil {
			return fmt.Errorf("dedupe: open %s: %w", dbiRecords, err)
		}
		if s.expiry, err = txn.OpenDBI(dbiExpiry, lmdb.Create); err != nil {
			return fmt.Errorf("dedupe: open %s: %w", dbiExpiry, err)
		}
		return nil
	})
}

// adoptRecordedMapSize makes the map at least as large as the size recorded
// in the environment, which a process that grew the map left there: a
// restart with the initial WEBHOOKD_MAP_SIZE must not shrink it back and
// grow it again, and another process must see what the server wrote.
func (s *Store) adoptRecordedMapSize() error {
	// Size 0 means "the size in the environment's meta page", or the data's
	// extent if that is larger.
	if err := s.env.SetMapSize(0); err != nil {
		return fmt.Errorf("dedupe: adopt map size: %w", err)
	}
	info, err := s.env.Info()
	if err != nil {
		return fmt.Errorf("dedupe: %w", err)
	}
	s.mapSize = info.MapSize
	if s.mapSize < s.opts.MapSize {
		if err := s.env.SetMapSize(s.opts.MapSize); err != nil {
			return fmt.Errorf("dedupe: set map size: %w", err)
		}
		s.mapSize = s.opts.MapSize
	}
	return nil
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
func (s *Store) Claim(ctx context.Context, key, fingerprint string) (Lease, *Record, error) {
	if err := checkKey(key); err != nil {
		return Lease{}, nil, err
	}
	// Fast path: duplicates of a finished or running event are answered
	// from a read transaction, without queueing for the writer.
	rec, err := s.Get(ctx, key)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return Lease{}, nil, err
	default:
		if r, err := decide(&rec, fingerprint, s.opts.Now()); err != nil || r != nil {
			return Lease{}, r, err
		}
	}

	token, err := newToken()
	if err != nil {
		return Lease{}, nil, err
	}
	var (
		lease Lease
		found *Record
	)
	err = s.update(ctx, func(txn *lmdb.Txn) error {
		lease, found = Lease{}, nil // the op may run twice (writer.go)
		now := s.opts.Now()
		cur, err := s.get(txn, key)
		var attempts uint32
		created := now
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return err
		default:
			if r, err := decide(&cur, fingerprint, now); err != nil || r != nil {
				found = r
				return err
			}
			attempts, created = cur.Attempts, cur.CreatedAt
			if err := s.unindex(txn, &cur); err != nil {
				return err
			}
		}
		rec := Record{
			Key: key, State: InFlight, Token: token,
			LeaseUntil: now.Add(s.opts.Lease), Attempts: attempts + 1,
			CreatedAt: created, UpdatedAt: now, Fingerprint: fingerprint,
		}
		rec.ExpiresAt = rec.LeaseUntil.Add(s.opts.AbandonAfter)
		if err := s.put(txn, &rec); err != nil {
			return err
		}
		lease = Lease{Key: key, Token: token, Until: rec.LeaseUntil}
		return nil
	})
	if err != nil {
		return Lease{}, found, err
	}
	return lease, found, nil
}

// decide says what an existing record means for a new claim: a record to
// replay, ErrInFlight, ErrFingerprintMismatch, or (nil, nil) when the key may
// be taken over.
func decide(rec *Record, fingerprint string, now time.Time) (*Record, error) {
	if rec.Fingerprint != fingerprint {
		return rec, ErrFingerprintMismatch
	}
	switch rec.State {
	case Completed, Failed:
		return rec, nil
	case InFlight:
		if now.Before(rec.LeaseUntil) {
			return rec, ErrInFlight
		}
		return nil, nil
	}
	return rec, fmt.Errorf("%w: key %q has state %v", ErrCorrupt, rec.Key, rec.State)
}

// Complete records a delivered event with the downstream's response.
func (s *Store) Complete(ctx context.Context, l Lease, resp Response) error {
	return s.finish(ctx, l, Completed, resp)
}

// Fail records an event the downstream rejected permanently, with its
// response, so that later deliveries replay the rejection.
func (s *Store) Fail(ctx context.Context, l Lease, resp Response) error {
	return s.finish(ctx, l, Failed, resp)
}

func (s *Store) finish(ctx context.Context, l Lease, st State, resp Response) error {
	if len(resp.Body) > MaxStoredBody {
		resp.Body = resp.Body[:MaxStoredBody]
	}
	return s.update(ctx, func(txn *lmdb.Txn) error {
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
func (s *Store) Release(ctx context.Context, l Lease) error {
	return s.update(ctx, func(txn *lmdb.Txn) error {
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
	if err := checkKey(key); err != nil {
		return err
	}
	return s.update(ctx, func(txn *lmdb.Txn) error {
		cur, err := s.get(txn, key)
		switch {
		case errors.Is(err, ErrCorrupt) && force:
			// Its index entry cannot be found without the record; the
			// pruner drops index entries whose record is gone.
			return txn.Del(s.records, []byte(key), nil)
		case err != nil:
			return err
		case !force && cur.State == InFlight && s.opts.Now().Before(cur.LeaseUntil):
			return fmt.Errorf("%w: lease runs until %s", ErrInFlight, cur.LeaseUntil.Format(time.RFC3339))
		}
		return s.del(txn, &cur)
	})
}

// owned returns the record of l's key if l still owns it.
func (s *Store) owned(txn *lmdb.Txn, l Lease) (Record, error) {
	cur, err := s.get(txn, l.Key)
	if errors.Is(err, ErrNotFound) {
		return Record{}, ErrLeaseLost
	}
	if err != nil {
		return Record{}, err
	}
	if cur.State != InFlight || cur.Token != l.Token {
		return Record{}, ErrLeaseLost
	}
	return cur, nil
}

// Get returns the record of key, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (Record, error) {
	if err := checkKey(key); err != nil {
		return Record{}, err
	}
	var rec Record
	err := s.view(func(txn *lmdb.Txn) error {
		var err error
		rec, err = s.get(txn, key)
		return err
	})
	return rec, err
}

// ListOptions filter List.
type ListOptions struct {
	Prefix string // keep keys that start with it ("stripe:")
	State  State  // keep this state only; 0 keeps all
	After  string // start after this key (paging)
	Limit  int    // at most this many; 0 means no limit
}

// List returns records in key order.
func (s *Store) List(ctx context.Context, o ListOptions) ([]Record, error) {
	var out []Record
	err := s.view(func(txn *lmdb.Txn) (err error) {
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
			k, v, err = cur.Get(nil, nil, lmdb.First)
		} else {
			k, v, err = cur.Get([]byte(start), nil, lmdb.SetRange)
		}
		for ; err == nil; k, v, err = cur.Get(nil, nil, lmdb.Next) {
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
		if lmdb.IsNotFound(err) {
			return nil
		}
		return err
	})
	return out, err
}

// Stats counts records by state.
func (s *Store) Stats(ctx context.Context) (map[State]int, error) {
	counts := map[State]int{}
	err := s.view(func(txn *lmdb.Txn) error {
		cur, err := txn.OpenCursor(s.records)
		if err != nil {
			return err
		}
		defer cur.Close()
		// Only the state byte is read: no copy of any key or value, so a
		// count costs no garbage however large the store.
		txn.RawRead = true
		var n int
		_, v, err := cur.Get(nil, nil, lmdb.First)
		for ; err == nil; _, v, err = cur.Get(nil, nil, lmdb.Next) {
			if len(v) > 1 {
				counts[State(v[1])]++
			}
			if n++; n%4096 == 0 {
				if cerr := ctx.Err(); cerr != nil {
					return cerr
				}
			}
		}
		if lmdb.IsNotFound(err) {
			return nil
		}
		return err
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
	return s.update(ctx, func(txn *lmdb.Txn) error {
		for _, dbi := range []lmdb.DBI{s.records, s.expiry} {
			if err := txn.Put(dbi, pingKey, nil, 0); err != nil {
				return err
			}
			if err := txn.Del(dbi, pingKey, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) get(txn *lmdb.Txn, key string) (_ Record, err error) {
	defer recoverCorrupt(&err, func() string { return fmt.Sprintf("key %q", key) })
	v, err := txn.Get(s.records, []byte(key))
	if lmdb.IsNotFound(err) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, err
	}
	return decodeRecord(key, v)
}

// put, unindex and del run inside writer ops only, so they may share the
// writer's scratch buffers; LMDB copies keys and values as it writes them.
func (s *Store) put(txn *lmdb.Txn, rec *Record) error {
	s.wval = rec.encode(s.wval[:0])
	s.wkey = append(s.wkey[:0], rec.Key...)
	if err := txn.Put(s.records, s.wkey, s.wval, 0); err != nil {
		return err
	}
	s.wkey = expiryKey(s.wkey[:0], rec.ExpiresAt, rec.Key)
	return txn.Put(s.expiry, s.wkey, nil, 0)
}

func (s *Store) unindex(txn *lmdb.Txn, rec *Record) error {
	s.wkey = expiryKey(s.wkey[:0], rec.ExpiresAt, rec.Key)
	err := txn.Del(s.expiry, s.wkey, nil)
	if lmdb.IsNotFound(err) {
		return nil
	}
	return err
}

func (s *Store) del(txn *lmdb.Txn, rec *Record) error {
	if err := s.unindex(txn, rec); err != nil {
		return err
	}
	return txn.Del(s.records, []byte(rec.Key), nil)
}

// view runs fn in a read transaction. A panic inside fn is an unreadable
// record (recoverCorrupt), and the transaction ends as for any error.
func (s *Store) view(fn lmdb.TxnOp) error {
	return s.read(func() error { return s.env.View(guardTxn(fn)) })
}

// update runs fn as one op of the writer (writer.go), with the same guard
// as view: a panic in the writer's goroutine would end the process.
func (s *Store) update(ctx context.Context, fn lmdb.TxnOp) error {
	return s.write(ctx, guardTxn(fn))
}

// guardTxn makes a panic in fn its error, so that the transaction is
// aborted normally and the caller hears ErrCorrupt.
func guardTxn(fn lmdb.TxnOp) lmdb.TxnOp {
	return func(txn *lmdb.Txn) (err error) {
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
		*err = fmt.Errorf("%w: %s: %v", ErrCorrupt, what(), r)
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
		if isErrno(err, lmdb.MapResized) && attempt < 3 {
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
		return ErrClosed
	}
	return fn()
}

// adoptMapSize picks up a map size set by another process (MDB_MAP_RESIZED).
func (s *Store) adoptMapSize() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.env.SetMapSize(0); err != nil {
		return fmt.Errorf("%w: adopt map size: %v", ErrUnavailable, err)
	}
	if info, err := s.env.Info(); err == nil {
		s.mapSize = info.MapSize
	}
	return nil
}

func checkKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidKey, len(key), MaxKeyLen)
	}
	return nil
}

func newToken() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("dedupe: token: %w", err)
		}
		// Zero marks "no owner" in finished records.
		if t := binary.BigEndian.Uint64(b[:]); t != 0 {
			return t, nil
		}
	}
}
