package statusapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

var errUnavailable = errors.New("status API unavailable")

func TestDo(t *testing.T) {
	const maxBytes = 16
	tests := []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration
		status  int
		answer  string
		err     string
	}{
		{"200", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"ok":true}`)) },
			time.Second, 200, `{"ok":true}`, ""},
		{"exactly the limit", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(strings.Repeat("a", maxBytes))) },
			time.Second, 200, strings.Repeat("a", maxBytes), ""},
		{"over the limit", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(strings.Repeat("a", maxBytes+1))) },
			time.Second, 200, "", "status API unavailable (answer larger than 16 bytes)"},
		{"404 keeps its status", func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) },
			time.Second, 404, "", "status API unavailable (HTTP 404)"},
		{"a non-200 wins over a large body", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(strings.Repeat("a", 2*maxBytes)))
		}, time.Second, 502, "", "status API unavailable (HTTP 502)"},
		{"redirect not followed", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) },
			time.Second, 302, "", "status API unavailable (HTTP 302)"},
		{"timeout", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			50 * time.Millisecond, 0, "", "status API unavailable (timed out after 50ms)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			call := statusapi.Call{Client: statusapi.NoRedirects(srv.Client()), Timeout: tc.timeout, MaxBytes: maxBytes, Unavailable: errUnavailable}
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/status", nil)
			require.NoError(t, err)
			status, answer, err := call.Do(context.Background(), req)
			require.Equal(t, tc.status, status)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				require.ErrorIs(t, err, errUnavailable)
				require.Nil(t, answer)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.answer, string(answer))
		})
	}
}

func TestDoRequestFailed(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/status"
	srv.Close()
	call := statusapi.Call{Client: statusapi.NoRedirects(nil), Timeout: time.Second, MaxBytes: 16, Unavailable: errUnavailable}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	status, _, err := call.Do(context.Background(), req)
	require.Zero(t, status)
	require.EqualError(t, err, "status API unavailable (request failed)", "the transport's error, which quotes the URL, is not wrapped")
}

func TestNoRedirectsCopies(t *testing.T) {
	own := &http.Client{Timeout: time.Minute}
	c := statusapi.NoRedirects(own)
	require.NotSame(t, own, c)
	require.Nil(t, own.CheckRedirect, "the caller's client is left as it was")
	require.NotNil(t, c.CheckRedirect)
	require.Equal(t, time.Minute, c.Timeout)
}
