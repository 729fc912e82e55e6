package lmdb

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// holdSyncs makes every sync of a pending commit's meta page (syncData)
// wait until the returned function is called; entered receives once per
// sync that starts waiting, and fail, when set, is what the sync answers.
func holdSyncs(t *testing.T, s *Store, fail error) (entered <-chan struct{}, release func()) {
	in := make(chan struct{}, 16)
	gate := make(chan struct{})
	var once sync.Once
	hold := func() error {
		in <- struct{}{}
		<-gate
		return fail
	}
	s.syncHook.Store(&hold)
	release = func() {
		once.Do(func() {
			s.syncHook.Store(nil)
			close(gate)
		})
	}
	t.Cleanup(release)
	return in, release
}

// recv waits for ch, failing the test rather than hanging when nothing
// comes.
func recv(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no sync of a pending commit started")
	}
}

// countSyncs counts the syncs of a pending commit's meta page.
func countSyncs(t *testing.T, s *Store) *atomic.Int64 {
	var n atomic.Int64
	count := func() error { n.Add(1); return nil }
	s.syncHook.Store(&count)
	t.Cleanup(func() { s.syncHook.Store(nil) })
	return &n
}

// waitQueued waits until n ops wait for the writer: goroutines hand their
// ops over in their own time.
func waitQueued(t *testing.T, s *Store, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return s.queued.Load() == n }, 10*time.Second, time.Millisecond)
}

// TestNobodyIsAnsweredBeforeTheMetaSync: a commit's meta page is written
// unsynced, and its callers hear back only once a sync has made it durable
// (here the explicit one of an idle writer); a failed sync answers them
// unavailable.
func TestNobodyIsAnsweredBeforeTheMetaSync(t *testing.T) {
	for _, tt := range []struct {
		name string
		fail error
		want error
	}{
		{"the sync lands", nil, nil},
		{"the sync fails", errors.New("EIO"), dedupe.ErrUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t, t.TempDir(), newClock())
			entered, release := holdSyncs(t, s, tt.fail)
			done := make(chan error, 1)
			go func() {
				_, _, err := s.Claim(ctx, "stripe:evt_1", "fp", nil)
				done <- err
			}()
			recv(t, entered)
			// The commit is made (readers see it), its meta page not yet
			// synced: the claim is not answered.
			rec, err := s.Get(ctx, "stripe:evt_1")
			require.NoError(t, err)
			require.Equal(t, dedupe.InFlight, rec.State)
			select {
			case err := <-done:
				t.Fatalf("answered before the meta page's sync: %v", err)
			default:
			}
			release()
			err = <-done
			if tt.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tt.want)
			}
		})
	}
}

// TestADuplicateWaitsForTheCommitItRead: a duplicate answered from a read
// transaction (the fast paths of Claim and Enqueue) that saw a commit not
// yet durable waits for that commit's sync before it answers: a replay or
// an acknowledgement never rests on what an operating-system crash could
// undo.
func TestADuplicateWaitsForTheCommitItRead(t *testing.T) {
	const key = "stripe:evt_1"
	enqueue := func(s *Store) (*dedupe.Record, error) {
		return s.Enqueue(ctx, dedupe.Enqueue{Key: key + "\x1fledger", Fingerprint: "fp", MaxAge: time.Hour,
			Request: dedupe.NewRequest("application/json", "", []byte("{}"), true)})
	}
	for _, tt := range []struct {
		name  string
		first func(s *Store) func() error // before the syncs are held; returns the write the duplicate reads
		again func(s *Store) (*dedupe.Record, error)
		want  dedupe.State
	}{
		{"a replay of an answer", func(s *Store) func() error {
			l, _, err := s.Claim(ctx, key, "fp", nil)
			require.NoError(t, err)
			return func() error { return s.Complete(ctx, l, dedupe.Response{Status: 200}) }
		}, func(s *Store) (*dedupe.Record, error) {
			_, rec, err := s.Claim(ctx, key, "fp", nil)
			return rec, err
		}, dedupe.Completed},
		{"a queued event acknowledged again", func(s *Store) func() error {
			return func() error { _, err := enqueue(s); return err }
		}, enqueue, dedupe.Queued},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t, t.TempDir(), newClock())
			write := tt.first(s)
			entered, release := holdSyncs(t, s, nil)
			first := make(chan error, 1)
			go func() { first <- write() }()
			recv(t, entered) // the write is committed; its meta page's sync is held
			again := make(chan error, 1)
			var got *dedupe.Record
			go func() {
				var err error
				got, err = tt.again(s)
				again <- err
			}()
			// The duplicate read the commit and queues behind its sync.
			waitQueued(t, s, 1)
			select {
			case err := <-again:
				t.Fatalf("the duplicate was answered before what it read was durable: %v", err)
			default:
			}
			release()
			require.NoError(t, <-first)
			require.NoError(t, <-again)
			require.NotNil(t, got)
			require.Equal(t, tt.want, got.State)
		})
	}
}

// TestTheNextCommitSyncsThePendingOne: under load a commit's meta page is
// made durable by the next commit's sync of its data pages, with no sync of
// its own: a commit held until a second write waits behind it is followed
// by one commit and one explicit sync, not two. A store opened with NoSync
// never syncs.
func TestTheNextCommitSyncsThePendingOne(t *testing.T) {
	for _, tt := range []struct {
		name      string
		noSync    bool
		wantSyncs int64
	}{
		{"synced", false, 1},
		{"NoSync", true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t, t.TempDir(), newClock(), func(o *Options) { o.NoSync = tt.noSync })
			syncs := countSyncs(t, s)
			entered, unblock := blockCommits(t, s)
			var wg sync.WaitGroup
			claim := func(key string) {
				defer wg.Done()
				_, _, err := s.Claim(ctx, key, "fp", nil)
				require.NoError(t, err)
			}
			wg.Add(1)
			go claim("stripe:evt_1")
			recv(t, entered)
			wg.Add(1)
			go claim("stripe:evt_2")
			waitQueued(t, s, 1)
			unblock()
			wg.Wait()
			require.Equal(t, tt.wantSyncs, syncs.Load())
			require.Equal(t, uint64(2), s.commits.Load())
		})
	}
}

// TestKeepLaterWaitsForNoCommit: KeepLater returns while the writer is
// held in a commit, and the copy is written ahead of any write handed to
// the writer after it: a ForceDelete that follows removes it, a Ping that
// follows finds it written.
func TestKeepLaterWaitsForNoCommit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		after func(s *Store) error
		want  error // Get's, once after has answered
	}{
		{"then a write", func(s *Store) error { return s.Ping(ctx) }, nil},
		{"then a delete", func(s *Store) error { return s.ForceDelete(ctx, "stripe:evt_1") }, dedupe.ErrNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			s := openTest(t, t.TempDir(), c)
			entered, unblock := blockCommits(t, s)
			held := make(chan error, 1)
			go func() { held <- s.Ping(ctx) }()
			<-entered
			now := c.Now()
			require.NoError(t, s.KeepLater(dedupe.Record{Key: "stripe:evt_1", State: dedupe.Completed,
				CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}), "returns while the writer is held")
			after := make(chan error, 1)
			go func() { after <- tt.after(s) }()
			waitQueued(t, s, 2)
			unblock()
			require.NoError(t, <-held)
			require.NoError(t, <-after)
			_, err := s.Get(ctx, "stripe:evt_1")
			if tt.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tt.want)
			}
		})
	}
}
