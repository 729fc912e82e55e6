package tiered

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/postgres"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

// While Postgres hangs, a duplicate of a record this node holds a copy of
// is replayed from the copy once its claim runs out of time (the check
// cannot be made), and a new event is refused: only Postgres may claim it.
// The server is a throwaway one, paused with SIGSTOP.
func TestTieredReplaysItsCopyWhilePostgresHangs(t *testing.T) {
	srv := pgtest.Start(t)
	opts := dedupe.Options{Lease: time.Minute, Retention: time.Hour}
	popts := postgres.Options{Options: opts, OpTimeout: 500 * time.Millisecond}
	popts.PruneInterval = -1
	shared, err := postgres.Open(context.Background(), srv.DSN(), popts)
	require.NoError(t, err)
	node := New(openTestLMDB(t, opts), shared)
	t.Cleanup(func() { node.Close() })
	ctx := context.Background()
	ok := dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}
	const key = "stripe:evt_hang"
	l, _, err := node.Claim(ctx, key, "fp", nil)
	require.NoError(t, err)
	require.NoError(t, node.Complete(ctx, l, ok))
	require.NoError(t, node.local.Ping(ctx)) // the copy (KeepLater) is written

	srv.Pause()
	defer srv.Resume()
	_, rec, err := node.Claim(ctx, key, "fp", nil)
	require.NoError(t, err)
	require.Equal(t, ok, rec.Response, "replayed from the copy")
	_, _, err = node.Claim(ctx, key, "other", nil)
	require.ErrorIs(t, err, dedupe.ErrFingerprintMismatch, "the copy is judged as the record would be")
	_, _, err = node.Claim(ctx, "stripe:evt_new", "fp", nil)
	require.ErrorIs(t, err, dedupe.ErrUnavailable)
	srv.Resume()

	_, rec, err = node.Claim(ctx, key, "fp", nil)
	require.NoError(t, err)
	require.Equal(t, ok, rec.Response)
}
