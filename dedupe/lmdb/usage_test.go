package lmdb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
)

func TestMapUsage(t *testing.T) {
	s, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true, MaxMapSize: 1 << 30})
	require.NoError(t, err)
	before, err := s.MapUsage()
	require.NoError(t, err)
	require.Positive(t, before.Used)
	require.Equal(t, s.MapSize(), before.Size)
	require.EqualValues(t, 1<<30, before.Max)

	body := make([]byte, 8<<10)
	for i := range 200 {
		l, _, err := s.Claim(context.Background(), fmt.Sprintf("stripe:evt_%d", i), "fp", dedupe.NewRequest("application/json", "t", body, true))
		require.NoError(t, err)
		require.NoError(t, s.Complete(context.Background(), l, dedupe.Response{Status: 200}))
	}
	after, err := s.MapUsage()
	require.NoError(t, err)
	require.Greater(t, after.Used, before.Used+200*8<<10-1, "the bodies are in the file")

	require.NoError(t, s.Close())
	_, err = s.MapUsage()
	require.ErrorIs(t, err, dedupe.ErrClosed)
}
