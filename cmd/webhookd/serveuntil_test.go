package main

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServeUntilDone(t *testing.T) {
	tests := []struct {
		name string
		// stop ends the serving: it cancels ctx or breaks the listener.
		stop    func(cancel context.CancelFunc, ln net.Listener)
		wantErr bool
	}{
		{name: "ctx done: nil, still serving, for the caller to shut down",
			stop: func(cancel context.CancelFunc, _ net.Listener) { cancel() }},
		{name: "the server fails: its error",
			stop: func(_ context.CancelFunc, ln net.Listener) { _ = ln.Close() }, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
			t.Cleanup(func() { _ = srv.Close() })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- serveUntilDone(ctx, srv, ln) }()
			tc.stop(cancel, ln)
			err = <-done
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			resp, err := http.Get("http://" + ln.Addr().String())
			require.NoError(t, err, "srv serves on until the caller shuts it down")
			_ = resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
}
