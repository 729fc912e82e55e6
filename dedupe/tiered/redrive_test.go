package tiered

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

// A redrive on one node is what every node replays afterwards: node B holds
// a local copy of the FAILED record, node A redrives it and records the new
// answer, and B's next duplicate replays A's answer, not its copy.
func TestTieredRedriveIsReplayedOnEveryNode(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	ctx := context.Background()
	opts := dedupe.Options{}
	a := openTieredNode(t, dsn, schema, opts, nil)
	b := openTieredNode(t, dsn, schema, opts, nil)
	const key, fp = "stripe:evt_redrive", "fp"
	req := dedupe.NewRequest("application/json", "charge.failed", []byte(`{"id":"evt_redrive"}`), true)
	rejected := dedupe.Response{Status: 422, ContentType: "application/json", Body: []byte(`{"rejected":true}`)}
	accepted := dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"accepted":true}`)}

	l, _, err := b.Claim(ctx, key, fp, req)
	require.NoError(t, err)
	require.NoError(t, b.Fail(ctx, l, rejected))
	_, rec, err := b.Claim(ctx, key, fp, nil)
	require.NoError(t, err)
	require.Equal(t, rejected, rec.Response)
	copyB, err := b.local.Get(ctx, key)
	require.NoError(t, err, "node B keeps a copy of the FAILED record")
	require.Equal(t, dedupe.Failed, copyB.State)

	r, got, err := a.Redrive(ctx, key)
	require.NoError(t, err)
	require.Equal(t, req, got.Request)
	_, rec, err = b.Claim(ctx, key, fp, nil)
	require.NoError(t, err)
	require.Equal(t, rejected, rec.Response, "node B replays the record's answer while A redrives")
	require.NoError(t, a.Complete(ctx, r, accepted))

	_, rec, err = b.Claim(ctx, key, fp, nil)
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, rec.State)
	require.Equal(t, accepted, rec.Response, "node B replays the redrive's answer")
	require.Equal(t, uint32(2), rec.Attempts)
	_, rec, err = a.Claim(ctx, key, fp, nil)
	require.NoError(t, err)
	require.Equal(t, accepted, rec.Response)
}
