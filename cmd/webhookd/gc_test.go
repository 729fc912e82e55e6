package main

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChooseGC: serve raises the GC percent and, in a container with a
// memory limit, sets a soft limit below it, unless the operator set GOGC or
// GOMEMLIMIT.
func TestChooseGC(t *testing.T) {
	noCgroup := func(string) ([]byte, error) { return nil, fs.ErrNotExist }
	cgroup := func(content string) func(string) ([]byte, error) {
		return func(path string) ([]byte, error) {
			if path != cgroupMemoryMax {
				return nil, errors.New("unexpected path " + path)
			}
			return []byte(content), nil
		}
	}
	tests := []struct {
		name     string
		env      map[string]string
		readFile func(string) ([]byte, error)
		want     gcSettings
	}{
		{"nothing set, no cgroup", nil, noCgroup, gcSettings{percent: defaultGCPercent}},
		{"nothing set, container limit", nil, cgroup("1073741824\n"), gcSettings{percent: defaultGCPercent, memoryLimit: 858993459}},
		{"cgroup without a limit", nil, cgroup("max\n"), gcSettings{percent: defaultGCPercent}},
		{"cgroup file unreadable as a number", nil, cgroup("garbage"), gcSettings{percent: defaultGCPercent}},
		{"operator's GOGC", map[string]string{"GOGC": "100"}, noCgroup, gcSettings{}},
		{"operator's GOGC=off, container limit", map[string]string{"GOGC": "off"}, cgroup("1073741824"), gcSettings{memoryLimit: 858993459}},
		{"operator's GOMEMLIMIT", map[string]string{"GOMEMLIMIT": "512MiB"}, cgroup("1073741824"), gcSettings{percent: defaultGCPercent}},
		{"operator's both", map[string]string{"GOGC": "200", "GOMEMLIMIT": "512MiB"}, cgroup("1073741824"), gcSettings{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			require.Equal(t, tt.want, chooseGC(getenv, tt.readFile))
		})
	}
}

// TestApplyGC: the chosen settings reach the runtime, and zero fields leave
// it as it was.
func TestApplyGC(t *testing.T) {
	prevPercent := debug.SetGCPercent(100)
	prevLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	applyGC(gcSettings{}, log)
	require.Equal(t, 100, debug.SetGCPercent(100), "zero leaves the percent")

	applyGC(gcSettings{percent: defaultGCPercent, memoryLimit: 1 << 30}, log)
	require.Equal(t, defaultGCPercent, debug.SetGCPercent(100))
	require.Equal(t, int64(1<<30), debug.SetMemoryLimit(prevLimit))
}
