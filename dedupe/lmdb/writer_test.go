package lmdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// blockCommits makes every commit wait until the returned function is
// called, as a disk whose fsync never returns would; entered is closed when
// the first commit starts waiting.
func blockCommits(t *testing.T, s *Store) (entered <-chan struct{}, unblock func()) {
	in := make(chan struct{})
	release := make(chan struct{})
	var once, done sync.Once
	hold := func() error {
		once.Do(func() { close(in) })
		<-release
		return nil
	}
	s.commitHook.Store(&hold)
	unblock = func() {
		done.Do(func() {
			s.commitHook.Store(nil)
			close(release)
		})
	}
	t.Cleanup(unblock)
	return in, unblock
}

// TestStuckCommitHonoursTheDeadline: while a commit does not return, a
// write waiting for it and a write queued behind it both give up at their
// deadline. The claim that was in the stuck commit takes effect once the
// disk answers, and then simply expires with its lease; the one still
// queued never does.
func TestStuckCommitHonoursTheDeadline(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c)
	entered, unblock := blockCommits(t, s)

	claim := func(key string, timeout time.Duration) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		_, _, err := s.Claim(ctx, key, "fp", nil)
		return time.Since(start), err
	}
	stuck := make(chan error, 1)
	go func() {
		_, err := claim("stripe:evt_in_commit", 200*time.Millisecond)
		stuck <- err
	}()
	<-entered
	took, err := claim("stripe:evt_queued", 100*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a queued write gives up")
	require.Less(t, took, 2*time.Second)
	select {
	case err := <-stuck:
		require.ErrorIs(t, err, context.DeadlineExceeded, "a write waiting for its commit gives up")
	case <-time.After(2 * time.Second):
		t.Fatal("a write waiting for a stuck commit ignored its deadline")
	}
	pctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s.Ping(pctx), context.DeadlineExceeded, "readiness fails while writes are stuck")

	unblock()
	require.NoError(t, s.Ping(ctx))
	_, err = s.Get(ctx, "stripe:evt_queued")
	require.ErrorIs(t, err, dedupe.ErrNotFound, "the write that gave up in the queue never ran")
	rec, err := s.Get(ctx, "stripe:evt_in_commit")
	require.NoError(t, err, "the write already in the commit took effect")
	require.Equal(t, dedupe.InFlight, rec.State)
	_, _, err = s.Claim(ctx, "stripe:evt_in_commit", "fp", nil)
	require.ErrorIs(t, err, dedupe.ErrInFlight, "its lease runs, with nobody forwarding")
	c.Advance(time.Minute)
	l, rec2, err := s.Claim(ctx, "stripe:evt_in_commit", "fp", nil)
	require.NoError(t, err, "then it expires like any abandoned claim")
	require.Nil(t, rec2)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
}

// TestWriteOfACallerGoneDoesNothing: a write whose caller has given up by
// the time the writer runs it changes nothing, so a claim is never made for
// a delivery that was already answered 503.
func TestWriteOfACallerGoneDoesNothing(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock())
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 50 {
		key := fmt.Sprintf("stripe:evt_gone_%d", i)
		_, _, err := s.Claim(gone, key, "fp", nil)
		require.ErrorIs(t, err, context.Canceled)
		_, err = s.Get(ctx, key)
		require.ErrorIs(t, err, dedupe.ErrNotFound, key)
	}
}

// TestSettleOfACallerGoneStillLands: a complete or release whose caller
// has stopped waiting (its store deadline ran out) still takes effect when
// the writer gets to it. Skipped, it would leave the key IN_FLIGHT until
// the lease passes, and the provider's next delivery of an event the core
// service already has would be forwarded again.
func TestSettleOfACallerGoneStillLands(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock())
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name   string
		settle func(l dedupe.Lease) error
		check  func(t *testing.T, key string)
	}{
		{"complete", func(l dedupe.Lease) error {
			return s.Complete(gone, l, dedupe.Response{Status: 200})
		}, func(t *testing.T, key string) {
			rec, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, rec.State)
		}},
		{"fail", func(l dedupe.Lease) error {
			return s.Fail(gone, l, dedupe.Response{Status: 400})
		}, func(t *testing.T, key string) {
			rec, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, dedupe.Failed, rec.State)
		}},
		{"release", func(l dedupe.Lease) error {
			return s.Release(gone, l)
		}, func(t *testing.T, key string) {
			_, err := s.Get(ctx, key)
			require.ErrorIs(t, err, dedupe.ErrNotFound)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := "stripe:evt_settle_" + tt.name
			l, _, err := s.Claim(ctx, key, "fp", nil)
			require.NoError(t, err)
			// The caller may hear its own give-up, or the answer if the
			// writer was quicker; either way the write lands.
			_ = tt.settle(l)
			require.Eventually(t, func() bool {
				rec, err := s.Get(ctx, key)
				return errors.Is(err, dedupe.ErrNotFound) || (err == nil && rec.State != dedupe.InFlight)
			}, 5*time.Second, 5*time.Millisecond)
			tt.check(t, key)
		})
	}
}

// TestBatchRollsBackOnlyTheOpThatFailed: ops share their batch's
// transaction without a nested one each, and yet an op that fails changes
// nothing while the ops beside it commit. One that refuses before writing
// (the common case: a duplicate, a lost lease) costs nothing more; one
// that fails after writing, or with a storage error, has the batch run
// again op by op.
func TestBatchRollsBackOnlyTheOpThatFailed(t *testing.T) {
	const middle = "stripe:evt_middle"
	writeMiddle := func(s *Store, txn *mdb.Txn) error {
		return s.putKV(txn, s.records, []byte(middle), []byte("not a record"))
	}
	for _, tt := range []struct {
		name    string
		op      func(s *Store, txn *mdb.Txn) error
		wantErr error
		redone  uint64
	}{
		{"refuses before writing", func(*Store, *mdb.Txn) error {
			return dedupe.ErrLeaseLost
		}, dedupe.ErrLeaseLost, 0},
		{"refuses after writing", func(s *Store, txn *mdb.Txn) error {
			if err := writeMiddle(s, txn); err != nil {
				return err
			}
			return dedupe.ErrLeaseLost
		}, dedupe.ErrLeaseLost, 1},
		{"storage error after writing", func(s *Store, txn *mdb.Txn) error {
			if err := writeMiddle(s, txn); err != nil {
				return err
			}
			return errors.New("injected I/O error")
		}, dedupe.ErrUnavailable, 1},
		{"storage error before writing", func(*Store, *mdb.Txn) error {
			return errors.New("injected I/O error")
		}, dedupe.ErrUnavailable, 1},
		{"counts a record, then refuses", func(s *Store, txn *mdb.Txn) error {
			rec := dedupe.Record{Key: middle, State: dedupe.InFlight, Token: 1}
			if err := s.put(txn, &rec); err != nil {
				return err
			}
			return dedupe.ErrLeaseLost
		}, dedupe.ErrLeaseLost, 1},
		{"succeeds", writeMiddle, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var batches []int
			s := openTest(t, t.TempDir(), newClock(), func(o *Options) {
				o.OnCommit = func(n int, _ time.Duration) {
					mu.Lock()
					defer mu.Unlock()
					batches = append(batches, n)
				}
			})
			entered, unblock := blockCommits(t, s)
			first := make(chan error, 1)
			go func() { _, _, err := s.Claim(ctx, "stripe:evt_first", "fp", nil); first <- err }()
			<-entered

			// Three ops queue behind the stuck commit, to run as one batch.
			errs := make([]chan error, 3)
			for i := range errs {
				errs[i] = make(chan error, 1)
			}
			go func() { _, _, err := s.Claim(ctx, "stripe:evt_a", "fp", nil); errs[0] <- err }()
			go func() { errs[1] <- s.update(ctx, func(txn *mdb.Txn) error { return tt.op(s, txn) }) }()
			go func() { _, _, err := s.Claim(ctx, "stripe:evt_c", "fp", nil); errs[2] <- err }()
			// The first claim's caller waits for its commit, the three
			// others for the writer to take them.
			require.Eventually(t, func() bool { return s.queued.Load() == 3 && parkedSenders() == 4 },
				5*time.Second, time.Millisecond, "the three wait for the writer")
			unblock()

			require.NoError(t, <-first)
			require.NoError(t, <-errs[0])
			if tt.wantErr == nil {
				require.NoError(t, <-errs[1])
			} else {
				require.ErrorIs(t, <-errs[1], tt.wantErr)
			}
			require.NoError(t, <-errs[2])
			mu.Lock()
			require.Equal(t, []int{1, 3}, batches, "the three ops shared one commit")
			mu.Unlock()
			for _, key := range []string{"stripe:evt_a", "stripe:evt_c"} {
				rec, err := s.Get(ctx, key)
				require.NoError(t, err, key)
				require.Equal(t, dedupe.InFlight, rec.State, key)
			}
			err := s.view(func(txn *mdb.Txn) error {
				_, err := txn.Get(s.records, []byte(middle))
				return err
			})
			if tt.wantErr == nil {
				require.NoError(t, err, "a successful op's write commits")
			} else {
				require.True(t, mdb.IsNotFound(err), "the failed op's write was rolled back: %v", err)
			}
			require.Equal(t, tt.redone, s.redone.Load(), "batches run again op by op")
			stats, err := s.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, map[dedupe.State]int{dedupe.InFlight: 3}, stats, "counted: the three claims, never the failed op")
		})
	}
}

// parkedSenders counts the goroutines blocked in Store.send: handing an op
// to the writer, or waiting for its commit.
func parkedSenders() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[select") && strings.Contains(g, "lmdb.(*Store).send(") {
			n++
		}
	}
	return n
}

// TestEveryWriteIsCounted: the writer decides whether a failed op needs a
// rollback by counting writes (Store.changes), so every write to LMDB in
// this package goes through putKV, appendCur, delKV or delCur. A direct txn.Put
// elsewhere would be a write the writer cannot see.
func TestEveryWriteIsCounted(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	write := regexp.MustCompile(`\.(Put|PutReserve|PutMulti|Del|Drop)\(`)
	allowed := map[string]bool{
		"return txn.Put(dbi, k, v, 0)":     true,
		"return txn.Del(dbi, k, nil)":      true,
		"return cur.Del(0)":                true,
		"err := cur.Put(k, v, mdb.Append)": true,
		"err = cur.Put(k, v, 0)":           true,
		"s.opPool.Put(o)":                  true, // a sync.Pool, not LMDB
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			if write.MatchString(line) && !allowed[strings.TrimSpace(line)] {
				t.Errorf("%s:%d writes to LMDB without putKV, appendCur, delKV or delCur: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestPruneOfACallerGoneReadsNothing: a prune whose caller gives up while
// its op is in a commit that does not return (Close ends the pruner's
// context so) answers its error alone: the op's counts are the writer's
// until it answers. Under -race, reading them raced with the writer.
func TestPruneOfACallerGoneReadsNothing(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c)
	l, _, err := s.Claim(ctx, "stripe:evt_old", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	c.Advance(2 * time.Hour) // past the retention

	entered, unblock := blockCommits(t, s)
	gone, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	var n int
	var more bool
	go func() {
		defer close(done)
		n, more, err = s.prune(gone, 10)
	}()
	<-entered
	<-done
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Zero(t, n)
	require.False(t, more)
	unblock()
	require.NoError(t, s.Ping(ctx))
}

// TestGatherWaitsForTheLastBatchsCallers: under load (a last commit of
// gatherMin ops or more, more ops queued than the batch holds) the writer
// takes ops as they come until it has as many as the last commit, or
// until gatherWait has passed; otherwise it does not wait.
func TestGatherWaitsForTheLastBatchsCallers(t *testing.T) {
	const maxBatch = 2 * gatherMin
	newWriter := func() *Store {
		// Buffered, so that the ops a case sends are waiting before gather
		// runs: no case depends on how fast a sender is scheduled.
		s := &Store{opts: Options{MaxBatch: maxBatch}, ops: make(chan *op, 4*maxBatch), later: make(chan *op, 4), quit: make(chan struct{})}
		s.queued.Store(2) // the batch's first op, and one more on its way
		return s
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	first := []*op{{key: "first"}}
	// send queues n ops for the writer, named by their order.
	send := func(s *Store, n int) {
		for i := range n {
			s.ops <- &op{key: fmt.Sprint(i)}
		}
	}
	// left takes the n ops that gather left for the next batch.
	left := func(s *Store, n int) {
		for range n {
			<-s.ops
		}
	}

	t.Run("after a small commit it does not wait", func(t *testing.T) {
		s := newWriter()
		send(s, 1)
		require.Len(t, s.gather(first, gatherMin-1, timer), 1)
		left(s, 1) // waiting, it would have taken it
	})
	t.Run("with nothing else queued it does not wait", func(t *testing.T) {
		s := newWriter()
		s.queued.Store(1) // the batch's first op only
		send(s, 1)
		require.Len(t, s.gather(first, gatherMin, timer), 1)
		left(s, 1)
	})
	t.Run("it stops once it has as many as the last commit", func(t *testing.T) {
		s := newWriter()
		send(s, gatherMin+2)
		got := s.gather(first, gatherMin, timer)
		require.Len(t, got, gatherMin)
		require.Equal(t, "0", got[1].key)
		left(s, 3)
	})
	t.Run("a write nobody waits for rides ahead of the op it came before", func(t *testing.T) {
		s := newWriter()
		s.later <- &op{key: "copy"}
		send(s, 1)
		got := s.gather(first, gatherMin, timer) // then waits gatherWait for more
		require.Len(t, got, 3)
		require.Equal(t, []string{"first", "copy", "0"}, []string{got[0].key, got[1].key, got[2].key})
	})
	t.Run("nobody comes: it gives up after gatherWait", func(t *testing.T) {
		s := newWriter()
		start := time.Now()
		require.Len(t, s.gather(first, gatherMin, timer), 1)
		require.GreaterOrEqual(t, time.Since(start), gatherWait)
		select {
		case <-timer.C:
			t.Fatal("the timer was left running")
		default:
		}
	})
	t.Run("closing stops it at once", func(t *testing.T) {
		s := newWriter()
		close(s.quit)
		require.Len(t, s.gather(first, gatherMin, timer), 1)
	})
	t.Run("it never takes more than MaxBatch", func(t *testing.T) {
		s := newWriter()
		send(s, 3*maxBatch)
		require.Len(t, s.gather(first, 100, timer), maxBatch)
		left(s, 3*maxBatch-(maxBatch-1))
	})
}
