package lmdb

import (
	"context"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// A store written before requests were kept (layout v1 records, no
// creation-time index) opens as it is: its records read without a request,
// the index is built at Open, and Recent lists them newest first.
func TestOpenStoreWithoutCreatedIndex(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	keys := []string{"stripe:old", "stripe:mid", "xendit:new"}
	require.NoError(t, s.update(ctx, func(txn *mdb.Txn) error {
		for i, k := range keys {
			at := t0.Add(time.Duration(i) * time.Second)
			rec := dedupe.Record{Key: k, State: dedupe.Completed, Attempts: 1, CreatedAt: at, UpdatedAt: at,
				ExpiresAt: at.Add(time.Hour), Fingerprint: "fp", Response: dedupe.Response{Status: 200}}
			if err := s.put(txn, &rec); err != nil {
				return err
			}
			// Rewrite it as webhookd wrote it before: layout v1, which
			// ends after the answer's body (no request byte).
			v1 := encodeV2(nil, &rec)
			v1[0] = recordVersion1
			if err := txn.Put(s.records, []byte(k), v1[:len(v1)-1], 0); err != nil {
				return err
			}
		}
		return txn.Drop(s.created, false)
	}))
	recs, _, err := s.Recent(ctx, dedupe.RecentOptions{})
	require.NoError(t, err)
	require.Empty(t, recs, "no index yet")
	require.NoError(t, s.Close())

	s, err = Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	defer s.Close()
	recs, _, err = s.Recent(ctx, dedupe.RecentOptions{})
	require.NoError(t, err)
	var got []string
	for _, r := range recs {
		require.Nil(t, r.Request)
		got = append(got, r.Key)
	}
	require.Equal(t, []string{"xendit:new", "stripe:mid", "stripe:old"}, got)
	_, _, err = s.Redrive(ctx, "stripe:old")
	require.ErrorIs(t, err, dedupe.ErrNoRequest, "a v1 record holds no request")
}
