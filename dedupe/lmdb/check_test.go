package lmdb

import (
	"os"
	"path/filepath"
	"testing"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

func TestCheckSoundStore(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, newClock())
	seedKeys(t, s, "stripe:a", "stripe:b", "xendit:c")
	_, _, err := s.Claim(ctx, "stripe:running", "fp")
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
			if tt.kind == DamageUnreadable {
				require.Contains(t, d.Examples[0], `after key "stripe:evt_a"`)
			} else {
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
