package lmdb

import (
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// scanStats counts s's records with a walk of every one, as Stats did
// before the counts were kept.
func scanStats(t *testing.T, s *Store) map[dedupe.State]int {
	t.Helper()
	var c stateCounts
	require.NoError(t, s.view(func(txn *mdb.Txn) (err error) {
		c, err = scanCounts(ctx, txn, s.records)
		return err
	}))
	return c.stats()
}

// TestStatsFollowsEveryTransition: after each kind of write, the counts
// Stats reads equal a walk of the records.
func TestStatsFollowsEveryTransition(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c)
	leases := map[string]dedupe.Lease{}
	claim := func(t *testing.T, key string) {
		l, _, err := s.Claim(ctx, key, "fp", nil)
		require.NoError(t, err)
		require.NotZero(t, l.Token)
		leases[key] = l
	}
	finished := func(key string, st dedupe.State) dedupe.Record {
		now := c.Now()
		return dedupe.Record{Key: key, State: st, Attempts: 1, CreatedAt: now, UpdatedAt: now,
			ExpiresAt: now.Add(time.Hour), Fingerprint: "fp", Response: dedupe.Response{Status: 200}}
	}
	steps := []struct {
		name string
		do   func(t *testing.T)
		want map[dedupe.State]int
	}{
		{"claim new keys", func(t *testing.T) {
			for _, k := range []string{"s:a", "s:b", "s:c", "s:d", "s:e"} {
				claim(t, k)
			}
		}, map[dedupe.State]int{dedupe.InFlight: 5}},
		{"complete", func(t *testing.T) {
			require.NoError(t, s.Complete(ctx, leases["s:a"], dedupe.Response{Status: 200}))
		}, map[dedupe.State]int{dedupe.InFlight: 4, dedupe.Completed: 1}},
		{"fail", func(t *testing.T) {
			require.NoError(t, s.Fail(ctx, leases["s:b"], dedupe.Response{Status: 400}))
		}, map[dedupe.State]int{dedupe.InFlight: 3, dedupe.Completed: 1, dedupe.Failed: 1}},
		{"release", func(t *testing.T) {
			require.NoError(t, s.Release(ctx, leases["s:c"]))
		}, map[dedupe.State]int{dedupe.InFlight: 2, dedupe.Completed: 1, dedupe.Failed: 1}},
		{"force-delete a live claim", func(t *testing.T) {
			require.NoError(t, s.ForceDelete(ctx, "s:d"))
		}, map[dedupe.State]int{dedupe.InFlight: 1, dedupe.Completed: 1, dedupe.Failed: 1}},
		{"take over an expired lease", func(t *testing.T) {
			c.Advance(2 * time.Minute)
			claim(t, "s:e")
		}, map[dedupe.State]int{dedupe.InFlight: 1, dedupe.Completed: 1, dedupe.Failed: 1}},
		{"delete a finished record", func(t *testing.T) {
			require.NoError(t, s.Delete(ctx, "s:b"))
		}, map[dedupe.State]int{dedupe.InFlight: 1, dedupe.Completed: 1}},
		{"keep a new key", func(t *testing.T) {
			require.NoError(t, s.Keep(ctx, finished("s:f", dedupe.Failed)))
		}, map[dedupe.State]int{dedupe.InFlight: 1, dedupe.Completed: 1, dedupe.Failed: 1}},
		{"keep over a finished record", func(t *testing.T) {
			require.NoError(t, s.Keep(ctx, finished("s:a", dedupe.Failed)))
		}, map[dedupe.State]int{dedupe.InFlight: 1, dedupe.Failed: 2}},
		{"keep over a live claim changes nothing", func(t *testing.T) {
			require.NoError(t, s.Keep(ctx, finished("s:e", dedupe.Completed)))
		}, map[dedupe.State]int{dedupe.InFlight: 1, dedupe.Failed: 2}},
		{"keep over a record that does not decode", func(t *testing.T) {
			require.NoError(t, s.Keep(ctx, finished("s:g", dedupe.Completed)))
			corrupt(t, s, "s:g")
			require.NoError(t, s.Keep(ctx, finished("s:g", dedupe.Completed)))
		}, map[dedupe.State]int{dedupe.InFlight: 1, dedupe.Completed: 1, dedupe.Failed: 2}},
		{"force-delete a record that does not decode", func(t *testing.T) {
			corrupt(t, s, "s:g")
			require.NoError(t, s.ForceDelete(ctx, "s:g"))
		}, map[dedupe.State]int{dedupe.InFlight: 1, dedupe.Failed: 2}},
		{"prune", func(t *testing.T) {
			// Kept at minute 2, s:a and s:f expire at 62; s:e, claimed at
			// minute 2 for one, is abandoned at 63.
			c.Advance(60*time.Minute + 30*time.Second)
			n, err := s.Prune(ctx, 100)
			require.NoError(t, err)
			require.Equal(t, 2, n)
		}, map[dedupe.State]int{dedupe.InFlight: 1}},
		{"prune a record that does not decode", func(t *testing.T) {
			corrupt(t, s, "s:e")
			c.Advance(2 * time.Hour)
			n, err := s.Prune(ctx, 100)
			require.NoError(t, err)
			require.Equal(t, 1, n)
		}, map[dedupe.State]int{}},
	}
	for _, step := range steps {
		// Steps build on each other: stop at the first that fails.
		require.True(t, t.Run(step.name, func(t *testing.T) {
			step.do(t)
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, step.want, st)
			require.Equal(t, scanStats(t, s), st)
		}))
	}
}

// rawMeta runs fn on dir's meta DBI through an environment of its own, as
// an older webhookd or an operator's tool would write it.
func rawMeta(t *testing.T, dir string, fn func(txn *mdb.Txn, meta mdb.DBI) error) {
	t.Helper()
	env, err := mdb.NewEnv()
	require.NoError(t, err)
	defer env.Close()
	require.NoError(t, env.SetMaxDBs(maxDBs))
	require.NoError(t, env.Open(dir, 0, 0o640))
	require.NoError(t, env.Update(func(txn *mdb.Txn) error {
		meta, err := txn.OpenDBI(dbiMeta, 0)
		if err != nil {
			return err
		}
		return fn(txn, meta)
	}))
}

// TestCountsComputedAtOpen: a store without counts (an older version's)
// or with counts that do not add up to its records gets them computed at
// Open.
func TestCountsComputedAtOpen(t *testing.T) {
	want := map[dedupe.State]int{dedupe.Completed: 3, dedupe.InFlight: 1}
	tests := []struct {
		name string
		edit func(txn *mdb.Txn, meta mdb.DBI) error
	}{
		{"counts entry removed", func(txn *mdb.Txn, meta mdb.DBI) error {
			return txn.Del(meta, countsKey, nil)
		}},
		{"meta DBI dropped, as before counts were kept", func(txn *mdb.Txn, meta mdb.DBI) error {
			return txn.Drop(meta, true)
		}},
		{"counts short of the records", func(txn *mdb.Txn, meta mdb.DBI) error {
			return txn.Put(meta, countsKey, (&stateCounts{0, 1, 0}).encode(), 0)
		}},
		{"counts entry garbled", func(txn *mdb.Txn, meta mdb.DBI) error {
			return txn.Put(meta, countsKey, []byte{1, 2, 3}, 0)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, dir, newClock())
			seedKeys(t, s, "s:a", "s:b", "s:c")
			_, _, err := s.Claim(ctx, "s:d", "fp", nil)
			require.NoError(t, err)
			require.NoError(t, s.Close())

			rawMeta(t, dir, tt.edit)

			s = openTest(t, dir, newClock())
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, want, st)
			require.NoError(t, s.Close())
			r, err := Check(dir)
			require.NoError(t, err)
			require.False(t, r.Damaged(), "%+v", r.Damage)
		})
	}
}

// TestCheckFindsWrongCounts: counts that disagree with the records walked,
// or that are gone, are damage.
func TestCheckFindsWrongCounts(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(txn *mdb.Txn, meta mdb.DBI) error
		example string
	}{
		{"a count moved between states", func(txn *mdb.Txn, meta mdb.DBI) error {
			return txn.Put(meta, countsKey, (&stateCounts{0, 2, 1}).encode(), 0)
		}, "2 counted, 3 walked"},
		{"counts entry removed", func(txn *mdb.Txn, meta mdb.DBI) error {
			return txn.Del(meta, countsKey, nil)
		}, "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, dir, newClock())
			seedKeys(t, s, "s:a", "s:b", "s:c")
			require.NoError(t, s.Close())
			rawMeta(t, dir, tt.edit)

			r, err := Check(dir)
			require.NoError(t, err)
			require.Len(t, r.Damage, 1, "%+v", r.Damage)
			require.Equal(t, DamageCounts, r.Damage[0].Kind)
			require.Contains(t, r.Damage[0].Examples[0], tt.example)
		})
	}
}
