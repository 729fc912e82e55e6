package deliver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/postgres"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
	"github.com/webhookd/webhookd/dispatch"
)

// countingCore counts the attempts of each event and answers 200.
type countingCore struct {
	mu   sync.Mutex
	got  map[string]int
	done chan struct{}
	want int
}

func (c *countingCore) Forward(_ context.Context, req dispatch.Request) dispatch.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got[req.IdempotencyKey]++
	if len(c.got) == c.want && c.done != nil {
		close(c.done)
		c.done = nil
	}
	return dispatch.Result{Outcome: dispatch.Delivered, Status: 200}
}

// Two nodes' loops on one Postgres store deliver one destination's queue
// together: every event once, none by both.
func TestTwoNodesDeliverEachEventOnce(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	open := func() *postgres.Store {
		s, err := postgres.Open(context.Background(), dsn, postgres.Options{Options: dedupe.Options{PruneInterval: -1}, Schema: schema})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	nodes := []*postgres.Store{open(), open()}
	const n = 200
	ctx := context.Background()
	for i := range n {
		_, err := nodes[i%2].Enqueue(ctx, dedupe.Enqueue{Key: fmt.Sprintf("stripe:evt_%d\x1fledger", i), Fingerprint: "fp",
			MaxAge: time.Hour, Request: dedupe.NewRequest("application/json", "", []byte("{}"), true)})
		require.NoError(t, err)
	}
	core := &countingCore{got: map[string]int{}, done: make(chan struct{}), want: n}
	done := core.done
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, s := range nodes {
		loop, err := New(Options{Store: s}, []Destination{{Name: "ledger", Forwarder: core, Concurrency: 8}})
		require.NoError(t, err)
		wg.Add(1)
		go func() { defer wg.Done(); loop.Run(runCtx) }()
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("not every event was delivered")
	}
	cancel()
	wg.Wait()
	core.mu.Lock()
	defer core.mu.Unlock()
	for key, c := range core.got {
		require.Equal(t, 1, c, key)
	}
}
