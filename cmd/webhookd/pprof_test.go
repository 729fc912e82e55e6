package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoopbackAddr(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:6060", true},
		{"127.0.0.2:6060", true},
		{"[::1]:6060", true},
		{"127.0.0.1:0", true},
		{":6060", false},
		{"0.0.0.0:6060", false},
		{"[::]:6060", false},
		{"192.168.1.5:6060", false},
		{"localhost:6060", false},
		{"127.0.0.1", false},
		{"127.0.0.1:", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := loopbackAddr(tt.addr)
			if tt.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, errNotLoopback)
			}
		})
	}
}

// TestServePprofOptIn: with WEBHOOKD_PPROF_ADDR the profiles are served on
// that address only, never on the providers' listener; without it nothing
// listens for them.
func TestServePprofOptIn(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer down.Close()
	// A free loopback port for the profiles.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	pprofAddr := ln.Addr().String()
	require.NoError(t, ln.Close())

	get := func(url string) int {
		resp, err := http.Get(url)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	for _, on := range []bool{false, true} {
		clearEnv(t)
		t.Setenv("WEBHOOKD_ADDR", "127.0.0.1:0")
		t.Setenv("WEBHOOKD_DATA_DIR", filepath.Join(t.TempDir(), "data"))
		t.Setenv("WEBHOOKD_DOWNSTREAM_URL", down.URL)
		t.Setenv("WEBHOOKD_STRIPE_SECRETS", testSecret)
		// Not the default port, which a webhookd running on this machine
		// may hold.
		t.Setenv("WEBHOOKD_ADMIN_ADDR", "127.0.0.1:0")
		if on {
			t.Setenv("WEBHOOKD_PPROF_ADDR", pprofAddr)
		}
		cfg, err := loadConfig()
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan string, 1)
		done := make(chan error, 1)
		go func() { done <- serve(ctx, cfg, slog.New(slog.DiscardHandler), ready) }()
		var addr string
		select {
		case addr = <-ready:
		case err := <-done:
			t.Fatalf("serve: %v", err)
		}

		require.Equal(t, http.StatusNotFound, get("http://"+addr+"/debug/pprof/"), "never on the providers' listener")
		if on {
			require.Equal(t, http.StatusOK, get("http://"+pprofAddr+"/debug/pprof/"))
			require.Equal(t, http.StatusOK, get("http://"+pprofAddr+"/debug/pprof/heap"))
		} else {
			require.Zero(t, get("http://"+pprofAddr+"/debug/pprof/"), "off by default")
		}
		cancel()
		require.NoError(t, <-done)
		if on {
			require.Zero(t, get("http://"+pprofAddr+"/debug/pprof/"), "closed with serve")
		}
	}
}
