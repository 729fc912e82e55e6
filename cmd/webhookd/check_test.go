package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
)

func checkCmd(t *testing.T, dataDir string, args ...string) (string, string, int) {
	t.Helper()
	clearEnv(t)
	t.Setenv("WEBHOOKD_DATA_DIR", dataDir)
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"check"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

// flipRecordVersion sets the first value byte (the record layout's
// version) of key's record in the closed store in dir to 0xfe, as a flipped
// bit on disk would. The record's node is the one whose mn_flags are 0 and
// whose mn_ksize, just before the key, is the key's length (LMDB's MDB_node:
// lo, hi, flags, ksize, key, value).
func flipRecordVersion(t *testing.T, dir, key string) {
	t.Helper()
	path := filepath.Join(dir, "data.mdb")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	n := 0
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte(key))
		if i < 0 {
			break
		}
		i += off
		off = i + 1
		if i >= 8 && le16(b[i-2:]) == len(key) && le16(b[i-4:]) == 0 {
			b[i+len(key)] = 0xfe
			n++
		}
	}
	require.NotZero(t, n)
	require.NoError(t, os.WriteFile(path, b, 0o640))
}

// le16 reads a little-endian uint16 (LMDB writes in the machine's order).
func le16(b []byte) int { return int(b[0]) | int(b[1])<<8 }

func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	seedStore(t, dir, 20)

	out, errOut, code := checkCmd(t, dir)
	require.Zero(t, code, errOut)
	require.Equal(t, 1, strings.Count(out, "\n"), out)
	require.Contains(t, out, filepath.Join(dir, "data.mdb")+" is sound: 22 records (1 IN_FLIGHT, 20 COMPLETED, 1 FAILED), 22 index entries (0 stale), 22 creation-time entries (0 stale)")

	flipRecordVersion(t, dir, "stripe:evt_00007")
	flipRecordVersion(t, dir, "stripe:evt_00011")
	out, _, code = checkCmd(t, dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "is DAMAGED: 2 problems in 22 records")
	require.Contains(t, out, `2 records that do not decode: "stripe:evt_00007", "stripe:evt_00011"`)
	require.Contains(t, out, "webhookd backup")

	fi, err := os.Stat(filepath.Join(dir, "data.mdb"))
	require.NoError(t, err)
	require.NoError(t, os.Truncate(filepath.Join(dir, "data.mdb"), fi.Size()/2))
	_, errOut, code = checkCmd(t, dir)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "is truncated")
	require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)

	empty := t.TempDir()
	_, errOut, code = checkCmd(t, empty)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "holds no store")
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, entries, "check creates nothing")

	_, errOut, code = checkCmd(t, dir, "extra")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "usage: webhookd check")
}

// TestCheckBesideAnOpenStore: check runs in its own process, read-only,
// beside a process that has the store open (as serve would).
func TestCheckBesideAnOpenStore(t *testing.T) {
	dir := t.TempDir()
	seedStore(t, dir, 5)
	s, err := lmdb.Open(dir, lmdb.Options{Options: dedupe.Options{PruneInterval: -1}})
	require.NoError(t, err)
	defer s.Close()
	before, err := os.ReadFile(filepath.Join(dir, "data.mdb"))
	require.NoError(t, err)

	out, errOut, code := execWebhookd(t, map[string]string{"WEBHOOKD_DATA_DIR": dir}, "check")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "is sound: 7 records")
	after, err := os.ReadFile(filepath.Join(dir, "data.mdb"))
	require.NoError(t, err)
	require.Equal(t, before, after, "check writes nothing")
	_, _, err = s.Claim(context.Background(), "stripe:evt_after", "fp", nil)
	require.NoError(t, err, "the store is still writable")
}

// TestServeRefusesADamagedStore: serve on a truncated or emptied data.mdb
// stops at once with one line naming the file and the way back, instead of
// starting (and dying of SIGBUS later, or forwarding everything again).
func TestServeRefusesADamagedStore(t *testing.T) {
	for _, size := range []string{"half", "zero"} {
		t.Run(size, func(t *testing.T) {
			dir := t.TempDir()
			seedStore(t, dir, 200)
			path := filepath.Join(dir, "data.mdb")
			fi, err := os.Stat(path)
			require.NoError(t, err)
			n := fi.Size() / 2
			if size == "zero" {
				n = 0
			}
			require.NoError(t, os.Truncate(path, n))
			_, errOut, code := execWebhookd(t, map[string]string{
				"WEBHOOKD_DATA_DIR":       dir,
				"WEBHOOKD_DOWNSTREAM_URL": "http://127.0.0.1:1/",
				"WEBHOOKD_STRIPE_SECRETS": testSecret,
				"WEBHOOKD_ADDR":           "127.0.0.1:0",
				"WEBHOOKD_ADMIN_ADDR":     "127.0.0.1:0",
			}, "serve")
			require.Equal(t, 1, code, errOut)
			require.Contains(t, errOut, path)
			require.Contains(t, errOut, "webhookd backup")
			require.Equal(t, 1, strings.Count(errOut, "dedupe: store damaged"), errOut)
		})
	}
}
