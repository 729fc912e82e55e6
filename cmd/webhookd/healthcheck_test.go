package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHealthURL(t *testing.T) {
	tests := []struct{ addr, want string }{
		{":8080", "http://127.0.0.1:8080/healthz"},
		{"0.0.0.0:8080", "http://127.0.0.1:8080/healthz"},
		{"[::]:9000", "http://127.0.0.1:9000/healthz"},
		{"127.0.0.1:8081", "http://127.0.0.1:8081/healthz"},
		{"10.1.2.3:80", "http://10.1.2.3:80/healthz"},
		{"[::1]:8080", "http://[::1]:8080/healthz"},
		{"localhost:8080", "http://localhost:8080/healthz"},
	}
	for _, tt := range tests {
		got, err := healthURL(tt.addr)
		require.NoError(t, err, tt.addr)
		require.Equal(t, tt.want, got, tt.addr)
	}
	for _, bad := range []string{"8080", "", "host:"} {
		_, err := healthURL(bad)
		require.Error(t, err, bad)
	}
}

func TestHealthcheckCommand(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/healthz", r.URL.Path)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	hc := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"healthcheck"}, args...), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}

	clearEnv(t)
	t.Setenv("WEBHOOKD_ADDR", ":"+port)
	t.Setenv("WEBHOOKD_ADMIN_ADDR", "127.0.0.1:0")
	code, out := hc()
	require.Zero(t, code, out)
	code, out = hc("--url", srv.URL+"/healthz")
	require.Zero(t, code, out)

	status = http.StatusServiceUnavailable
	code, out = hc()
	require.Equal(t, 1, code)
	require.Contains(t, out, "status 503")

	srv.Close()
	code, _ = hc()
	require.Equal(t, 1, code, "nothing listening")

	code, _ = hc("--bogus")
	require.Equal(t, 2, code)
	code, _ = hc("extra")
	require.Equal(t, 2, code)
	t.Setenv("WEBHOOKD_ADDR", "no-port")
	code, out = hc()
	require.Equal(t, 2, code)
	require.Contains(t, out, "WEBHOOKD_ADDR")
}
