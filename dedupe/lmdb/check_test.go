package lmdb

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

func TestCheckSoundStore(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, newClock())
	seedKeys(t, s, "stripe:a", "stripe:b", "xendit:c")
	_, _, err := s.Claim(ctx, "stripe:running", "fp", nil)
	require.NoError(t, err)

	require.NoError(t, s.Close())
	// Check opens its own environment: LMDB must not have one open twice in
	// a process (closing either drops the other's file lock), so the store
	// is closed first here; cmd/webhookd tests check beside an open store.
	r, err := Check(dir)
	require.NoError(t, err)
	require.False(t, r.Damaged(), "%+v", r.Damage)
	require.Equal(t, 4, r.Records)
	require.Equal(t, map[dedupe.State]int{dedupe.Completed: 3, dedupe.InFlight: 1}, r.ByState)
	require.Equal(t, 4, r.Index)
	require.Zero(t, r.Stale)
	require.Equal(t, 4, r.Created)
	require.Zero(t, r.CreatedStale)
	require.Equal(t, filepath.Join(dir, DataFile), r.File)
	require.EqualValues(t, r.Size, uint64(r.PageSize)*r.Pages)

	// A forced delete of an unreadable record leaves its index entry for
	// the pruner: stale, not damage.
	s = openTest(t, dir, newClock())
	corrupt(t, s, "stripe:b")
	require.NoError(t, s.ForceDelete(ctx, "stripe:b"))
	require.NoError(t, s.Close())
	r, err = Check(dir)
	require.NoError(t, err)
	require.False(t, r.Damaged(), "%+v", r.Damage)
	require.Equal(t, 1, r.Stale)
	// Its creation-time index entry is left too, and Recent passes over
	// it.
	require.Equal(t, 1, r.CreatedStale)
	require.Equal(t, 4, r.Created)
}

// rawCreated runs fn on dir's creation-time index through an environment
// of its own, as an older webhookd or an operator's tool would write it.
func rawCreated(t *testing.T, dir string, fn func(txn *mdb.Txn, created mdb.DBI) error) {
	t.Helper()
	env, err := mdb.NewEnv()
	require.NoError(t, err)
	defer env.Close()
	require.NoError(t, env.SetMaxDBs(maxDBs))
	require.NoError(t, env.Open(dir, 0, 0o640))
	require.NoError(t, env.Update(func(txn *mdb.Txn) error {
		created, err := txn.OpenDBI(dbiCreated, 0)
		if err != nil {
			return err
		}
		return fn(txn, created)
	}))
}

// TestCheckCreatedIndex: entries of the creation-time index that Recent
// passes over harmlessly are stale, and a store without the index yet
// (an older version's, which Open indexes) is checked without it.
func TestCheckCreatedIndex(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(txn *mdb.Txn, created mdb.DBI) error
		created   int
		stale     int
		indexless bool
	}{
		{"entry of a deleted record", func(txn *mdb.Txn, created mdb.DBI) error {
			return txn.Put(created, createdKey(nil, time.Unix(1, 0), "stripe:gone"), []byte{byte(dedupe.Completed)}, 0)
		}, 4, 1, false},
		{"entry at another creation time", func(txn *mdb.Txn, created mdb.DBI) error {
			return txn.Put(created, createdKey(nil, time.Unix(1, 0), "stripe:a"), []byte{byte(dedupe.Failed)}, 0)
		}, 4, 1, false},
		{"index not built (DBI absent)", func(txn *mdb.Txn, created mdb.DBI) error {
			return txn.Drop(created, true)
		}, 0, 0, true},
		{"index not built (DBI empty)", func(txn *mdb.Txn, created mdb.DBI) error {
			return txn.Drop(created, false)
		}, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, dir, newClock())
			seedKeys(t, s, "stripe:a", "stripe:b", "xendit:c")
			require.NoError(t, s.Close())
			rawCreated(t, dir, tt.edit)

			r, err := Check(dir)
			require.NoError(t, err)
			require.False(t, r.Damaged(), "%+v", r.Damage)
			require.Equal(t, 3, r.Records)
			require.Equal(t, tt.created, r.Created)
			require.Equal(t, tt.stale, r.CreatedStale)

			if tt.indexless {
				// Open builds the index, and then it is checked.
				s = openTest(t, dir, newClock())
				require.NoError(t, s.Close())
				r, err = Check(dir)
				require.NoError(t, err)
				require.False(t, r.Damaged(), "%+v", r.Damage)
				require.Equal(t, 3, r.Created)
			}
		})
	}
}

// TestCheckFindsDamage: flipped bytes in a record's value, a length on
// disk out of range, and a record that lost its index entry are each
// reported with their count and key, and the walk goes on past them.
func TestCheckFindsDamage(t *testing.T) {
	const bad = "stripe:evt_damaged"
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string, s *Store)
		kind   string
	}{
		{"version byte flipped", func(t *testing.T, dir string, s *Store) {
			require.NoError(t, s.Close())
			flipValueByte(t, dir, bad, 0, 0xfe)
		}, DamageUndecoded},
		{"fingerprint length flipped", func(t *testing.T, dir string, s *Store) {
			require.NoError(t, s.Close())
			flipValueByte(t, dir, bad, 48, 1) // "fp" is 2 bytes
		}, DamageUndecoded},
		{"body length flipped", func(t *testing.T, dir string, s *Store) {
			require.NoError(t, s.Close())
			flipValueByte(t, dir, bad, 52, 1) // "ok" is 2 bytes, the value's last
		}, DamageUndecoded},
		{"state byte flipped", func(t *testing.T, dir string, s *Store) {
			require.NoError(t, s.Close())
			flipValueByte(t, dir, bad, 1, 0x42)
		}, DamageState},
		{"value length out of range", func(t *testing.T, dir string, s *Store) {
			require.NoError(t, s.Close())
			damageValueLength(t, dir, bad)
		}, DamageUnreadable},
		{"index entry lost", func(t *testing.T, dir string, s *Store) {
			rec, err := s.Get(ctx, bad)
			require.NoError(t, err)
			require.NoError(t, s.write(ctx, func(txn *mdb.Txn) error {
				return txn.Del(s.expiry, expiryKey(nil, rec.ExpiresAt, bad), nil)
			}))
			require.NoError(t, s.Close())
		}, DamageUnindexed},
		{"creation-time index entry lost", func(t *testing.T, dir string, s *Store) {
			rec, err := s.Get(ctx, bad)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			rawCreated(t, dir, func(txn *mdb.Txn, created mdb.DBI) error {
				return txn.Del(created, createdKey(nil, rec.CreatedAt, bad), nil)
			})
		}, DamageUncreated},
		{"creation-time index entry with another state", func(t *testing.T, dir string, s *Store) {
			rec, err := s.Get(ctx, bad)
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, rec.State)
			require.NoError(t, s.Close())
			rawCreated(t, dir, func(txn *mdb.Txn, created mdb.DBI) error {
				return txn.Put(created, createdKey(nil, rec.CreatedAt, bad), []byte{byte(dedupe.Failed)}, 0)
			})
		}, DamageCreatedState},
		{"creation-time index entry without its state byte", func(t *testing.T, dir string, s *Store) {
			rec, err := s.Get(ctx, bad)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			rawCreated(t, dir, func(txn *mdb.Txn, created mdb.DBI) error {
				return txn.Put(created, createdKey(nil, rec.CreatedAt, bad), nil, 0)
			})
		}, DamageCreatedKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, dir, newClock())
			seedKeys(t, s, "stripe:evt_a", bad, "stripe:evt_z")
			tt.damage(t, dir, s)

			r, err := Check(dir)
			require.NoError(t, err)
			require.True(t, r.Damaged())
			require.Len(t, r.Damage, 1, "%+v", r.Damage)
			d := r.Damage[0]
			require.Equal(t, tt.kind, d.Kind)
			require.Equal(t, 1, d.Count)
			require.Len(t, d.Examples, 1)
			switch tt.kind {
			case DamageUnreadable:
				require.Contains(t, d.Examples[0], `after key "stripe:evt_a"`)
			case DamageCreatedKey:
				require.Contains(t, d.Examples[0], bad+`"`) // after the time's bytes
			default:
				require.Contains(t, d.Examples[0], `"`+bad+`"`)
			}
			require.Equal(t, 3, r.Records, "the walk went on past the damage")
		})
	}
}

func TestCheckRefusesWhatOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	seedSized(t, dir, 100)
	fi, err := os.Stat(filepath.Join(dir, DataFile))
	require.NoError(t, err)
	require.NoError(t, os.Truncate(filepath.Join(dir, DataFile), fi.Size()/2))
	_, err = Check(dir)
	require.ErrorIs(t, err, ErrDamaged)

	_, err = Check(t.TempDir())
	require.ErrorIs(t, err, ErrNoStore)
}
