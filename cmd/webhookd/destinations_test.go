package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/routing"
)

func TestDestinationsListShowsARemovedDestinationsQueue(t *testing.T) {
	ctx := context.Background()
	s, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	for _, k := range []dedupe.Key{
		{Source: "stripe-eu", Event: "evt_1", Destination: "ledger"},
		{Source: "stripe-eu", Event: "evt_2", Destination: "refunds"}, // refunds: removed by a reload
		{Source: "stripe-eu", Event: "evt_3", Destination: "refunds"},
	} {
		_, err := s.Enqueue(ctx, dedupe.Enqueue{Key: k.String(), Fingerprint: "fp", MaxAge: time.Hour,
			Request: dedupe.NewRequest("application/json", "charge.refunded", []byte(`{}`), true)})
		require.NoError(t, err)
	}
	require.NoError(t, s.SetPaused(ctx, "refunds", true))
	c := &routing.Config{Destinations: []*routing.Destination{
		{Name: "billing", URL: "https://billing.internal/hook", Delivery: routing.Sync},
		{Name: "ledger", URL: "https://ledger.internal/events", Delivery: routing.Queue},
	}}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, listDestinations(ctx, s, c, &out, &errOut), errOut.String())
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	require.Len(t, lines, 4, out.String())
	require.Regexp(t, `^billing\s+sync\s+no\s+-\s+-$`, string(lines[1]))
	require.Regexp(t, `^ledger\s+queue\s+no\s+1\s+\S+Z$`, string(lines[2]))
	require.Regexp(t, `^refunds\s+queue \(removed\)\s+since \S+\s+2\s+\S+Z$`, string(lines[3]))
}
