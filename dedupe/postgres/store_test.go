package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/dedupetest"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

var ctx = context.Background()

func testPostgresDSN(t testing.TB) string { t.Helper(); return pgtest.DSN(t) }

func testSchema(t testing.TB, dsn string) string { t.Helper(); return pgtest.Schema(t, dsn) }

func openTestPG(t testing.TB, dsn, schema string, opts dedupe.Options) *Store {
	t.Helper()
	opts.PruneInterval = -1
	s, err := Open(context.Background(), dsn, Options{Options: opts, Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// The behavioural table every backend passes. Without Postgres it skips
// once, not once per case.
func TestConformance(t *testing.T) {
	dsn := testPostgresDSN(t)
	dedupetest.Run(t, func(t *testing.T, opts dedupe.Options) dedupe.Store {
		return openTestPG(t, dsn, testSchema(t, dsn), opts)
	})
}

// BenchmarkBackendClaimComplete measures one delivery's store work, a claim
// and a completion of a new key, from parallel callers:
// go test ./dedupe/postgres -run '^$' -bench BackendClaimComplete
func BenchmarkBackendClaimComplete(b *testing.B) {
	dsn := testPostgresDSN(b)
	dedupetest.BenchClaimComplete(b, openTestPG(b, dsn, testSchema(b, dsn), dedupe.Options{}), nil)
}

// Two nodes, each with its own pool, race for one key: one lease in all.
func TestPostgresClaimIsAtomicAcrossNodes(t *testing.T) {
	dsn := testPostgresDSN(t)
	schema := testSchema(t, dsn)
	nodes := []*Store{openTestPG(t, dsn, schema, dedupe.Options{}), openTestPG(t, dsn, schema, dedupe.Options{})}
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
			_, rec, err := nodes[i%2].Claim(context.Background(), "stripe:evt_race", "fp", nil)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && rec == nil:
				leases++
			case err != nil:
				require.ErrorIs(t, err, dedupe.ErrInFlight)
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
	s := openTestPG(t, dsn, testSchema(t, dsn), dedupe.Options{})
	_, err := Open(context.Background(), "postgres://u:secretpw@127.0.0.1:1/x?sslmode=disable&connect_timeout=1", Options{})
	require.ErrorIs(t, err, dedupe.ErrUnavailable)
	require.NotContains(t, err.Error(), "secretpw")
	s.pool.Close() // the connection is gone; the store is not closed
	_, _, err = s.Claim(context.Background(), "stripe:evt", "fp", nil)
	require.ErrorIs(t, err, dedupe.ErrUnavailable)
	require.NotContains(t, err.Error(), "127.0.0.1")
	require.NoError(t, s.Close())
	_, _, err = s.Claim(context.Background(), "stripe:evt", "fp", nil)
	require.ErrorIs(t, err, dedupe.ErrClosed)
}

// A connection string that does not parse is ErrInvalidDSN, quoting neither
// the string nor a variable of the command's.
func TestOpenRefusesAnInvalidDSN(t *testing.T) {
	_, err := Open(context.Background(), "postgres://u:secretpw@127.0.0.1:notaport/x", Options{})
	require.ErrorIs(t, err, ErrInvalidDSN)
	require.NotContains(t, err.Error(), "secretpw")
	require.NotContains(t, err.Error(), "WEBHOOKD_")
}

// BenchmarkPostgresReplay measures a provider retry of a finished event
// whose stored request is 1 KiB or 1 MiB (run with -benchmem):
// go test ./dedupe/postgres -run '^$' -bench PostgresReplay -benchmem
func BenchmarkPostgresReplay(b *testing.B) {
	dsn := pgtest.DSN(b)
	s := openTestPG(b, dsn, testSchema(b, dsn), dedupe.Options{})
	for _, size := range []int{1 << 10, dedupe.MaxStoredRequest} {
		b.Run(fmt.Sprintf("body=%dKiB", size>>10), func(b *testing.B) {
			dedupetest.BenchReplay(b, s, size)
		})
	}
}
