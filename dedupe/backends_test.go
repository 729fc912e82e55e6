package dedupe

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// backend is the method set every store has; the behavioural table below
// runs against each.
type backend interface {
	Claim(ctx context.Context, key, fingerprint string) (Lease, *Record, error)
	Complete(ctx context.Context, l Lease, resp Response) error
	Fail(ctx context.Context, l Lease, resp Response) error
	Release(ctx context.Context, l Lease) error
	Get(ctx context.Context, key string) (Record, error)
	Delete(ctx context.Context, key string) error
	ForceDelete(ctx context.Context, key string) error
	List(ctx context.Context, o ListOptions) ([]Record, error)
	Stats(ctx context.Context) (map[State]int, error)
	Ping(ctx context.Context) error
	Prune(ctx context.Context, limit int) (int, error)
	Lease() time.Duration
	Close() error
}

var (
	_ backend = (*Store)(nil)
	_ backend = (*PGStore)(nil)
	_ backend = (*Tiered)(nil)
)

// fakeClock is a settable clock shared by a test's stores.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// testPostgresDSN returns the test database, or skips the test without one.
func testPostgresDSN(t testing.TB) string {
	dsn := os.Getenv("WEBHOOKD_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("WEBHOOKD_TEST_POSTGRES_DSN is not set")
	}
	return dsn
}

// testSchema returns a fresh schema name, dropped when the test ends.
func testSchema(t testing.TB, dsn string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "webhookd_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop test schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop test schema: %v", err)
		}
	})
	return schema
}

func openTestPG(t testing.TB, dsn, schema string, opts Options) *PGStore {
	opts.PruneInterval = -1
	s, err := OpenPostgres(context.Background(), dsn, PostgresOptions{Options: opts, Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func openTestLMDB(t testing.TB, opts Options) *Store {
	opts.PruneInterval, opts.NoSync = -1, true
	s, err := Open(t.TempDir(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// backends are the factories the behavioural table runs over.
var backends = []struct {
	name string
	open func(t *testing.T, opts Options) backend
}{
	{"lmdb", func(t *testing.T, opts Options) backend { return openTestLMDB(t, opts) }},
	{"postgres", func(t *testing.T, opts Options) backend {
		dsn := testPostgresDSN(t)
		return openTestPG(t, dsn, testSchema(t, dsn), opts)
	}},
	{"tiered", func(t *testing.T, opts Options) backend {
		dsn := testPostgresDSN(t)
		return NewTiered(openTestLMDB(t, opts), openTestPG(t, dsn, testSchema(t, dsn), opts))
	}},
}

func TestBackendsBehaveAlike(t *testing.T) {
	ctx := context.Background()
	const (
		key = "stripe:evt_1"
		fp  = "fp-a"
	)
	ok := Response{Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}
	cases := []struct {
		name string
		run  func(t *testing.T, s backend, clock *fakeClock)
	}{
		{"claim, in flight, mismatch", func(t *testing.T, s backend, clock *fakeClock) {
			l, rec, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.Nil(t, rec)
			require.NotZero(t, l.Token)
			require.Equal(t, clock.Now().Add(time.Minute), l.Until)
			_, rec, err = s.Claim(ctx, key, fp)
			require.ErrorIs(t, err, ErrInFlight)
			require.Equal(t, l.Until, rec.LeaseUntil)
			_, _, err = s.Claim(ctx, key, "fp-b")
			require.ErrorIs(t, err, ErrFingerprintMismatch)
			_, _, err = s.Claim(ctx, "", fp)
			require.ErrorIs(t, err, ErrInvalidKey)
		}},
		{"complete then replay", func(t *testing.T, s backend, clock *fakeClock) {
			l, _, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, l, ok))
			for range 2 {
				_, rec, err := s.Claim(ctx, key, fp)
				require.NoError(t, err)
				require.Equal(t, Completed, rec.State)
				require.Equal(t, ok, rec.Response)
			}
			_, rec, err := s.Claim(ctx, key, "fp-b")
			require.ErrorIs(t, err, ErrFingerprintMismatch)
			require.NotNil(t, rec)
			require.ErrorIs(t, s.Complete(ctx, l, ok), ErrLeaseLost, "a second Complete")
			got, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, uint32(1), got.Attempts)
			require.Equal(t, clock.Now().Add(2*time.Hour), got.ExpiresAt)
			require.Zero(t, got.Token)
		}},
		{"fail then replay, body capped", func(t *testing.T, s backend, clock *fakeClock) {
			l, _, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			big := bytes.Repeat([]byte("x"), MaxStoredBody+10)
			require.NoError(t, s.Fail(ctx, l, Response{Status: 422, Body: big}))
			_, rec, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.Equal(t, Failed, rec.State)
			require.Equal(t, 422, rec.Response.Status)
			require.Len(t, rec.Response.Body, MaxStoredBody)
		}},
		{"release frees the key", func(t *testing.T, s backend, clock *fakeClock) {
			l, _, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.NoError(t, s.Release(ctx, l))
			require.ErrorIs(t, s.Release(ctx, l), ErrLeaseLost)
			_, err = s.Get(ctx, key)
			require.ErrorIs(t, err, ErrNotFound)
			l2, rec, err := s.Claim(ctx, key, "fp-b")
			require.NoError(t, err, "a released key is new again, whatever its payload")
			require.Nil(t, rec)
			require.NotEqual(t, l.Token, l2.Token)
		}},
		{"takeover after the lease; the late finisher loses", func(t *testing.T, s backend, clock *fakeClock) {
			old, _, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			clock.Advance(59 * time.Second)
			_, _, err = s.Claim(ctx, key, fp)
			require.ErrorIs(t, err, ErrInFlight)
			clock.Advance(time.Second)
			_, _, err = s.Claim(ctx, key, "fp-b")
			require.ErrorIs(t, err, ErrFingerprintMismatch, "no takeover by another payload")
			cur, _, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.NotEqual(t, old.Token, cur.Token)
			require.ErrorIs(t, s.Complete(ctx, old, ok), ErrLeaseLost)
			require.ErrorIs(t, s.Fail(ctx, old, ok), ErrLeaseLost)
			require.ErrorIs(t, s.Release(ctx, old), ErrLeaseLost)
			rec, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, InFlight, rec.State)
			require.Equal(t, uint32(2), rec.Attempts)
			require.NoError(t, s.Complete(ctx, cur, ok))
		}},
		{"delete refuses a live claim", func(t *testing.T, s backend, clock *fakeClock) {
			require.ErrorIs(t, s.Delete(ctx, key), ErrNotFound)
			l, _, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.ErrorIs(t, s.Delete(ctx, key), ErrInFlight)
			require.NoError(t, s.ForceDelete(ctx, key))
			require.ErrorIs(t, s.Complete(ctx, l, ok), ErrLeaseLost)
			_, _, err = s.Claim(ctx, key, fp)
			require.NoError(t, err)
			clock.Advance(time.Minute)
			require.NoError(t, s.Delete(ctx, key), "a claim past its lease is deletable")
			l, _, err = s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, l, ok))
			require.NoError(t, s.Delete(ctx, key))
			_, rec, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.Nil(t, rec, "a deleted event is forwarded again")
		}},
		{"prune deletes exactly what expired", func(t *testing.T, s backend, clock *fakeClock) {
			finish := func(k string) {
				l, _, err := s.Claim(ctx, k, fp)
				require.NoError(t, err)
				require.NoError(t, s.Complete(ctx, l, ok))
			}
			for i := range 3 {
				finish(fmt.Sprintf("stripe:old%d", i))
			}
			clock.Advance(time.Hour)
			finish("stripe:new0")
			finish("stripe:new1")
			_, _, err := s.Claim(ctx, "stripe:running", fp) // expires at lease+1h abandon
			require.NoError(t, err)
			n, err := s.Prune(ctx, 10)
			require.NoError(t, err)
			require.Zero(t, n)
			clock.Advance(time.Hour) // old ones expire now, exactly
			n, err = s.Prune(ctx, 2)
			require.NoError(t, err)
			require.Equal(t, 2, n)
			n, err = s.Prune(ctx, 10)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			n, err = s.Prune(ctx, 10)
			require.NoError(t, err)
			require.Zero(t, n)
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, 2, st[Completed])
			require.Equal(t, 1, st[InFlight])
			_, err = s.Get(ctx, "stripe:old0")
			require.ErrorIs(t, err, ErrNotFound)
			_, rec, err := s.Claim(ctx, "stripe:new1", fp)
			require.NoError(t, err)
			require.Equal(t, Completed, rec.State)
		}},
		{"list filters and pages in key order", func(t *testing.T, s backend, clock *fakeClock) {
			for _, k := range []string{"xendit:a", "stripe:b", "stripe:a", "stripe:c"} {
				l, _, err := s.Claim(ctx, k, fp)
				require.NoError(t, err)
				if k != "stripe:c" {
					require.NoError(t, s.Complete(ctx, l, ok))
				}
			}
			keys := func(o ListOptions) []string {
				recs, err := s.List(ctx, o)
				require.NoError(t, err)
				var out []string
				for _, r := range recs {
					out = append(out, r.Key)
				}
				return out
			}
			require.Equal(t, []string{"stripe:a", "stripe:b", "stripe:c", "xendit:a"}, keys(ListOptions{}))
			require.Equal(t, []string{"stripe:a", "stripe:b"}, keys(ListOptions{Prefix: "stripe:", State: Completed}))
			require.Equal(t, []string{"stripe:b", "stripe:c"}, keys(ListOptions{Prefix: "stripe:", After: "stripe:a", Limit: 2}))
			require.Equal(t, []string{"stripe:c"}, keys(ListOptions{State: InFlight}))
			require.NoError(t, s.Ping(ctx))
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, map[State]int{Completed: 3, InFlight: 1}, st, "Ping leaves nothing behind")
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					clock := newFakeClock()
					s := b.open(t, Options{Lease: time.Minute, Retention: 2 * time.Hour, AbandonAfter: time.Hour, Now: clock.Now})
					tc.run(t, s, clock)
				})
			}
		})
	}
}

// Two nodes, each with its own pool, race for one key: one lease in all.
func TestPostgresClaimIsAtomicAcrossNodes(t *testing.T) {
	dsn := testPostgresDSN(t)
	schema := testSchema(t, dsn)
	nodes := []*PGStore{openTestPG(t, dsn, schema, Options{}), openTestPG(t, dsn, schema, Options{})}
	const n = 50
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		leases   int
		inFlight int
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, rec, err := nodes[i%2].Claim(context.Background(), "stripe:evt_race", "fp")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && rec == nil:
				leases++
			case err != nil:
				require.ErrorIs(t, err, ErrInFlight)
				inFlight++
			}
		}()
	}
	close(start)
	wg.Wait()
	require.Equal(t, 1, leases)
	require.Equal(t, n-1, inFlight)
}

// A dead database answers ErrUnavailable, and the message names neither
// host nor user.
func TestPostgresUnavailable(t *testing.T) {
	dsn := testPostgresDSN(t)
	s := openTestPG(t, dsn, testSchema(t, dsn), Options{})
	_, err := OpenPostgres(context.Background(), "postgres://u:secretpw@127.0.0.1:1/x?sslmode=disable&connect_timeout=1", PostgresOptions{})
	require.ErrorIs(t, err, ErrUnavailable)
	require.NotContains(t, err.Error(), "secretpw")
	s.pool.Close() // the connection is gone; the store is not closed
	_, _, err = s.Claim(context.Background(), "stripe:evt", "fp")
	require.ErrorIs(t, err, ErrUnavailable)
	require.NotContains(t, err.Error(), "127.0.0.1")
	require.NoError(t, s.Close())
	_, _, err = s.Claim(context.Background(), "stripe:evt", "fp")
	require.ErrorIs(t, err, ErrClosed)
}
