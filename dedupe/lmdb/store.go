package lmdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

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
	// requests is the request log (requests.go); requestSeq numbers its
	// keys.
	requests   mdb.DBI
	requestSeq atomic.Uint32
	due        mdb.DBI // the queue's due index (keys.go)
	waiting    mdb.DBI // the queue's waiting events by arrival (keys.go)

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

	ops chan *op
	// later holds the writes nobody waits for (KeepLater), taken by the
	// writer ahead of ops.
	later     chan *op
	queued    atomic.Int64 // callers in write that the writer has not received yet
	quit      chan struct{}
	writerWG  sync.WaitGroup
	prunerWG  sync.WaitGroup
	closeOnce sync.Once

	// nestEveryOp makes the writer run every op of a batch in its own
	// nested transaction, not only a batch to redo (writer.go): the
	// baseline BenchmarkClaimComplete measures the writer against. Only
	// benchmarks set it (export_test.go).
	nestEveryOp atomic.Bool

	// dueRead counts the due index entries Take has read: what a delivery
	// pass costs (TestTakeCostsTheDueEvents).
	dueRead atomic.Uint64

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

	// unsettled holds the answers being written again (retryAnswer).
	unsettled dedupe.Unsettled
}

// laterOps bounds the copies waiting for the writer (KeepLater): a
// burst of a second's finished deliveries on a loaded node.
const laterOps = 4096

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
	s := &Store{opts: opts, logger: opts.Logger, env: env, mapSize: opts.MapSize, ops: make(chan *op), later: make(chan *op, laterOps), quit: make(chan struct{})}
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
		if s.requests, err = txn.OpenDBI(dbiRequests, mdb.Create); err != nil {
			return fmt.Errorf("dedupe: open %s: %w", dbiRequests, err)
		}
		if s.due, err = txn.OpenDBI(dbiDue, mdb.Create); err != nil {
			return fmt.Errorf("dedupe: open %s: %w", dbiDue, err)
		}
		if s.waiting, err = txn.OpenDBI(dbiWaiting, mdb.Create); err != nil {
			return fmt.Errorf("dedupe: open %s: %w", dbiWaiting, err)
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
		s.unsettled.Flush() // one last attempt for each answer being retried
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

// Logger returns the logger the store reports its rare events to, so that
// a store built over this one (tiered) reports to the same place.
func (s *Store) Logger() *slog.Logger { return s.logger }

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
