package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// checkGate holds the first check statement the pool sends until release
// is closed, and counts the check statements.
type checkGate struct {
	n       atomic.Int64
	first   chan struct{} // closed when the first check statement starts
	release chan struct{}
	once    sync.Once
}

func (g *checkGate) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "updated_at FROM") {
		g.n.Add(1)
		g.once.Do(func() {
			close(g.first)
			<-g.release
		})
	}
	return ctx
}

func (g *checkGate) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The checks waiting while one is read are all read by the next
// statement, however many there are, each key answered its own row (or
// ErrNotFound), a key asked twice included.
func TestPostgresChecksWaitingShareOneStatement(t *testing.T) {
	dsn := testPostgresDSN(t)
	gate := &checkGate{first: make(chan struct{}), release: make(chan struct{})}
	opts := Options{Options: dedupe.Options{Lease: time.Minute, Retention: time.Hour, PruneInterval: -1},
		Schema: testSchema(t, dsn), Tracer: gate}
	s, err := Open(ctx, dsn, opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	want := map[string]time.Time{}
	for i := range 3 {
		key := fmt.Sprintf("stripe:evt_check%d", i)
		l, _, err := s.Claim(ctx, key, "fp", nil)
		require.NoError(t, err)
		rec, err := s.FinishRecord(ctx, l, dedupe.Completed, dedupe.Response{Status: 200})
		require.NoError(t, err)
		want[key] = rec.UpdatedAt
	}
	const waiting = 12
	type answer struct {
		key string
		at  time.Time
		err error
	}
	answers := make(chan answer, waiting+1)
	ask := func(key string) {
		at, err := s.UpdatedAt(ctx, key)
		answers <- answer{key, at, err}
	}
	go ask("stripe:evt_check0")
	<-gate.first
	for i := range waiting {
		go ask(fmt.Sprintf("stripe:evt_check%d", i%4)) // evt_check3 is absent
	}
	require.Eventually(t, func() bool { return len(s.checks) == waiting }, 10*time.Second, time.Millisecond)
	close(gate.release)
	for range waiting + 1 {
		a := <-answers
		if at, ok := want[a.key]; ok {
			require.NoError(t, a.err, a.key)
			require.Equal(t, at, a.at, a.key)
		} else {
			require.ErrorIs(t, a.err, dedupe.ErrNotFound, a.key)
		}
	}
	require.Equal(t, int64(2), gate.n.Load(), "the first check, then one statement for the others")
}
