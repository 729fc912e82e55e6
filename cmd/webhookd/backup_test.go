package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
)

// seedCompleted writes n COMPLETED records into a store in dir and closes it.
func seedCompleted(t *testing.T, dir string, n int) {
	t.Helper()
	s, err := lmdb.Open(dir, lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		l, _, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_%03d", i), "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: []byte("ok")}))
	}
}

func TestBackupCommand(t *testing.T) {
	clearEnv(t)
	data := t.TempDir()
	seedCompleted(t, data, 25)
	t.Setenv("WEBHOOKD_DATA_DIR", data)
	dest := filepath.Join(t.TempDir(), "bk")

	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"backup", dest}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), filepath.Join(dest, "data.mdb"))

	b, err := lmdb.Open(dest, lmdb.Options{Options: dedupe.Options{PruneInterval: -1}})
	require.NoError(t, err)
	stats, err := b.Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, map[dedupe.State]int{dedupe.Completed: 25}, stats)
	require.NoError(t, b.Close())

	none := filepath.Join(t.TempDir(), "none")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		code int
		want string // in stderr
	}{
		{"no DEST", []string{"backup"}, nil, 2, "usage: webhookd backup DEST"},
		{"two DESTs", []string{"backup", "a", "b"}, nil, 2, "usage: webhookd backup DEST"},
		{"DEST not empty", []string{"backup", dest}, nil, 1, "not empty"},
		{"DEST is the data dir", []string{"backup", data}, nil, 1, "is the data directory itself"},
		{"no store", []string{"backup", filepath.Join(t.TempDir(), "x")}, map[string]string{"WEBHOOKD_DATA_DIR": none}, 1, "no store in WEBHOOKD_DATA_DIR="},
		{"bad config", []string{"backup", filepath.Join(t.TempDir(), "y")}, map[string]string{"WEBHOOKD_MAX_READERS": "2"}, 2, "WEBHOOKD_MAX_READERS: must be at least 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			require.Equal(t, tt.code, run(context.Background(), tt.args, &stdout, &stderr))
			require.Contains(t, stderr.String(), tt.want)
		})
	}
	_, err = os.Stat(none)
	require.True(t, os.IsNotExist(err), "a backup never creates a store")
}

func TestStoreVariables(t *testing.T) {
	clearEnv(t)
	c, err := loadConfig()
	require.NoError(t, err)
	require.Equal(t, 1024, c.MaxReaders)
	require.Equal(t, time.Minute, c.PruneInterval)
	for env, want := range map[string]string{
		"WEBHOOKD_PRUNE_INTERVAL=0s":    "WEBHOOKD_PRUNE_INTERVAL: must be positive",
		"WEBHOOKD_PRUNE_INTERVAL=often": "WEBHOOKD_PRUNE_INTERVAL: cannot parse",
		"WEBHOOKD_MAX_READERS=3":        "WEBHOOKD_MAX_READERS: must be at least 4",
	} {
		k, v, _ := strings.Cut(env, "=")
		t.Run(env, func(t *testing.T) {
			t.Setenv(k, v)
			_, err := loadConfig()
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), want), err.Error())
		})
	}
	var out bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"help"}, &out, &bytes.Buffer{}))
	for _, v := range []string{"WEBHOOKD_MAX_READERS", "WEBHOOKD_PRUNE_INTERVAL", "backup"} {
		require.Contains(t, out.String(), v)
	}
}
