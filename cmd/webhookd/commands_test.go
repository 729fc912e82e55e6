package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/capture"
	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
)

// stubReceiver answers every delivery with status (and
// Idempotent-Replayed when replayed), counting those whose Stripe
// signature verifies with testSecret.
func stubReceiver(t *testing.T, status int, replayed bool) (*httptest.Server, *atomic.Int32) {
	ad, err := spec.NewBuiltin("stripe", []string{testSecret}, nil, nil)
	require.NoError(t, err)
	var verified atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/webhooks/stripe" && ad.Verify(context.Background(), providers.Delivery{Header: r.Header, Body: body}) == nil {
			verified.Add(1)
		}
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":"stub"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &verified
}

func TestReplayExitStatus(t *testing.T) {
	fixtures := stripeFixtures
	tests := []struct {
		status   int
		replayed bool
		code     int
	}{
		{200, false, 0},
		{201, false, 0},
		{200, true, 0},
		{409, false, 0},
		{400, false, 1},
		{401, false, 1},
		{404, false, 1},
		{413, false, 1},
		{422, false, 1},
		{500, false, 1},
		{503, false, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d replayed=%v", tt.status, tt.replayed), func(t *testing.T) {
			srv, verified := stubReceiver(t, tt.status, tt.replayed)
			out, errOut, code := replayCmd(t, "--url", srv.URL, fixtures)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			require.EqualValues(t, len(testFixtures), verified.Load(), "each fixture sent once, signed with WEBHOOKD_STRIPE_SECRETS")
			require.Contains(t, out, fmt.Sprintf("%d requests", len(testFixtures)))
		})
	}
	t.Run("transport error", func(t *testing.T) {
		srv, _ := stubReceiver(t, 200, false)
		srv.Close()
		out, _, code := replayCmd(t, "--url", srv.URL, fixtures)
		require.Equal(t, 1, code)
		require.Contains(t, out, "error (")
	})
	t.Run("one failure among successes fails the run", func(t *testing.T) {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 2 {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		defer srv.Close()
		_, _, code := replayCmd(t, "--url", srv.URL, fixtures)
		require.Equal(t, 1, code)
	})
}

func TestReplayRefusesBeforeSending(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	defer srv.Close()
	fixtures := stripeFixtures

	run1 := func(env map[string]string, args ...string) (string, int) {
		clearEnv(t)
		for k, v := range env {
			t.Setenv(k, v)
		}
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"replay", "--url", srv.URL}, args...), &out, &errb)
		return errb.String(), code
	}

	stderr, code := run1(nil, fixtures)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "WEBHOOKD_STRIPE_SECRETS is not set")
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)

	// A fixture outside a provider folder needs --provider.
	odd := filepath.Join(t.TempDir(), "events", "x.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(odd), 0o755))
	require.NoError(t, os.WriteFile(odd, []byte(`{"id":"evt_x","object":"event"}`), 0o644))
	stderr, code = run1(map[string]string{"WEBHOOKD_STRIPE_SECRETS": testSecret}, fixtures, odd)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `"events" is not a provider`)
	require.Contains(t, stderr, "--provider")

	stderr, code = run1(map[string]string{"WEBHOOKD_STRIPE_SECRETS": testSecret}, filepath.Join(fixtures, "nope.json"))
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "nope.json")

	stderr, code = run1(map[string]string{"WEBHOOKD_STRIPE_SECRETS": testSecret})
	require.Equal(t, 2, code, "no PATH")
	require.Contains(t, stderr, "Usage:")

	for _, bad := range [][]string{{"--repeat", "0"}, {"--concurrency", "0"}, {"--timeout", "0s"}, {"--url", "localhost:8080"}, {"--url", srv.URL + "/webhooks/stripe"}} {
		_, code = run1(map[string]string{"WEBHOOKD_STRIPE_SECRETS": testSecret}, append(bad, fixtures)...)
		require.Equal(t, 2, code, bad)
	}
	// A bad WEBHOOKD_* value is reported as serve reports it, but replay
	// does not need WEBHOOKD_DOWNSTREAM_URL.
	stderr, code = run1(map[string]string{"WEBHOOKD_STRIPE_SECRETS": testSecret, "WEBHOOKD_LEASE": "soon"}, fixtures)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "WEBHOOKD_LEASE: cannot parse")
	require.Zero(t, requests.Load(), "nothing was sent")

	// --provider sends the odd file as Stripe.
	_, code = run1(map[string]string{"WEBHOOKD_STRIPE_SECRETS": testSecret}, "--provider", "stripe", odd)
	require.Zero(t, code)
	require.EqualValues(t, 1, requests.Load())
}

// seedStore writes records into a store in dir and closes it: n COMPLETED
// Stripe keys (stripe:evt_00000 ...), one FAILED Xendit key and one
// IN_FLIGHT Stripe key whose lease runs.
func seedStore(t *testing.T, dir string, n int) {
	t.Helper()
	ctx := context.Background()
	s, err := lmdb.Open(dir, lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	defer s.Close()
	for i := range n {
		l, _, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_%05d", i), "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}))
	}
	l, _, err := s.Claim(ctx, "xendit:invoice.paid:inv_1", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Fail(ctx, l, dedupe.Response{Status: 400, Body: []byte("bad \x1b[31m\xff")}))
	_, _, err = s.Claim(ctx, "stripe:evt_inflight", "fp", nil)
	require.NoError(t, err)
}

func keysCmd(t *testing.T, dataDir string, args ...string) (string, string, int) {
	t.Helper()
	clearEnv(t)
	t.Setenv("WEBHOOKD_DATA_DIR", dataDir)
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"keys"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

func TestKeysListPagesAndFilters(t *testing.T) {
	dir := t.TempDir()
	const n = keysPage*2 + 7 // more than two pages
	seedStore(t, dir, n)

	out, errOut, code := keysCmd(t, dir, "list", "--json")
	require.Zero(t, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, n+2)
	var prev string
	for _, l := range lines {
		var v admin.RecordView
		require.NoError(t, json.Unmarshal([]byte(l), &v))
		require.Greater(t, v.Key, prev, "in key order, no repeats across pages")
		prev = v.Key
		require.Nil(t, v.Response, "a listing shows no bodies")
		require.Nil(t, v.Request)
	}

	out, _, code = keysCmd(t, dir, "list", "--limit", fmt.Sprint(keysPage+1))
	require.Zero(t, code)
	rows := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, rows, keysPage+2, "header and limit rows")
	require.True(t, strings.HasPrefix(rows[0], "KEY"))

	out, _, code = keysCmd(t, dir, "list", "--provider", "xendit")
	require.Zero(t, code)
	require.Regexp(t, `(?m)^xendit:invoice.paid:inv_1\s+FAILED\s+1\s+400\s`, out)
	require.NotContains(t, out, "stripe:")

	out, _, code = keysCmd(t, dir, "list", "--state", "IN_FLIGHT", "--json")
	require.Zero(t, code)
	var v admin.RecordView
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Equal(t, "stripe:evt_inflight", v.Key)
	require.NotEmpty(t, v.LeaseUntil)
	require.Zero(t, v.Status)

	for _, bad := range [][]string{{"list", "--state", "DONE"}, {"list", "--limit", "-1"}, {"list", "--provider", "stripe:evt_1"}, {"list", "extra"}, {"frob"}, {}} {
		_, errOut, code := keysCmd(t, dir, bad...)
		require.Equal(t, 2, code, bad)
		require.NotEmpty(t, errOut, bad)
	}
}

func TestKeysGetAndDelete(t *testing.T) {
	dir := t.TempDir()
	seedStore(t, dir, 1)

	out, errOut, code := keysCmd(t, dir, "get", "xendit:invoice.paid:inv_1")
	require.Zero(t, code, errOut)
	require.Regexp(t, `(?m)^state\s+FAILED$`, out)
	require.Regexp(t, `(?m)^status\s+400$`, out)
	require.Contains(t, out, `"bad \x1b[31m\xff"`, "a body that is not text is printed quoted")
	require.NotContains(t, out, "\x1b")

	out, _, code = keysCmd(t, dir, "get", "--json", "xendit:invoice.paid:inv_1")
	require.Zero(t, code)
	var v admin.RecordView
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Nil(t, v.Response.Body)
	require.Equal(t, []byte("bad \x1b[31m\xff"), v.Response.BodyBase64, "binary body as base64, not mangled")

	out, _, code = keysCmd(t, dir, "get", "stripe:evt_inflight")
	require.Zero(t, code)
	require.Regexp(t, `(?m)^state\s+IN_FLIGHT$`, out)
	require.Contains(t, out, "left)")

	// Unknown keys and non-keys.
	_, errOut, code = keysCmd(t, dir, "get", "stripe:evt_unknown")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no record for stripe:evt_unknown")
	_, errOut, code = keysCmd(t, dir, "delete", "stripe:evt_unknown")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no record for stripe:evt_unknown")
	for _, bad := range []string{"evt_00000", ":evt", "stripe:"} {
		_, errOut, code = keysCmd(t, dir, "get", bad)
		require.Equal(t, 2, code, bad)
		require.Contains(t, errOut, "provider:event-key", bad)
	}
	_, _, code = keysCmd(t, dir, "get")
	require.Equal(t, 2, code)

	// A running claim is not deleted without --force.
	_, errOut, code = keysCmd(t, dir, "delete", "stripe:evt_inflight")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--force")
	out, errOut, code = keysCmd(t, dir, "delete", "stripe:evt_inflight", "--force")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "deleted stripe:evt_inflight (was IN_FLIGHT)")

	out, _, code = keysCmd(t, dir, "delete", "stripe:evt_00000")
	require.Zero(t, code)
	require.Contains(t, out, "was COMPLETED")
	_, _, code = keysCmd(t, dir, "get", "stripe:evt_00000")
	require.Equal(t, 1, code, "gone")
}

func TestKeysNeverCreatesTheDataDir(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "data")
	for _, args := range [][]string{{"list"}, {"get", "stripe:evt_1"}, {"delete", "stripe:evt_1"}} {
		_, errOut, code := keysCmd(t, missing, args...)
		require.NotZero(t, code, args)
		require.Contains(t, errOut, "WEBHOOKD_DATA_DIR", args)
		require.Contains(t, errOut, missing, args)
		require.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	}
	_, err := os.Stat(missing)
	require.ErrorIs(t, err, os.ErrNotExist)

	// An existing folder without a store stays empty.
	require.NoError(t, os.Mkdir(missing, 0o750))
	_, errOut, code := keysCmd(t, missing, "list")
	require.NotZero(t, code)
	require.Contains(t, errOut, "holds no store")
	entries, err := os.ReadDir(missing)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestServeCapturesHostileKeysSafely: a Stripe event id may hold "/" and
// "..": the capture lands inside <dir>/stripe under a sanitised name.
func TestServeCapturesHostileKeysSafely(t *testing.T) {
	clearEnv(t)
	root := t.TempDir()
	captureDir := filepath.Join(root, "captures")
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer down.Close()
	t.Setenv("WEBHOOKD_ADDR", "127.0.0.1:0")
	t.Setenv("WEBHOOKD_ADMIN_ADDR", "127.0.0.1:0")
	t.Setenv("WEBHOOKD_DATA_DIR", filepath.Join(root, "data"))
	t.Setenv("WEBHOOKD_DOWNSTREAM_URL", down.URL)
	t.Setenv("WEBHOOKD_STRIPE_SECRETS", testSecret)
	t.Setenv("WEBHOOKD_CAPTURE_DIR", captureDir)
	cfg, err := loadConfig()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, slog.New(slog.DiscardHandler), ready) }()
	url := "http://" + <-ready + "/webhooks/stripe"

	ids := []string{"../../../escape", "..", "a/b", "evt_ok", "CON"}
	for _, id := range ids {
		body := []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":"x"}`, id))
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Stripe-Signature", stripeSignature(t, testSecret, time.Now(), body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, id)

		got, err := os.ReadFile(filepath.Join(captureDir, "stripe", capture.FileName(id)))
		require.NoError(t, err, id)
		require.Equal(t, body, got, id)
	}
	// An unverified delivery is not captured.
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"id":"evt_forged"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	cancel()
	require.NoError(t, <-done)
	var files []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(p, captureDir) {
			files = append(files, p)
		}
		return err
	}))
	require.Len(t, files, len(ids), "one file per verified event, all under %s: %v", captureDir, files)
	for _, f := range files {
		require.Equal(t, filepath.Join(captureDir, "stripe"), filepath.Dir(f))
	}
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, entries, 2, "only data and captures at the top: nothing escaped")
}

func TestSinkCommand(t *testing.T) {
	for _, args := range [][]string{{"--status", "42"}, {"--status", "600"}, {"extra"}, {"--nope"}} {
		var errb bytes.Buffer
		require.Equal(t, 2, run(context.Background(), append([]string{"sink"}, args...), io.Discard, &errb), args)
		require.NotEmpty(t, errb.String())
	}
	var errb bytes.Buffer
	require.Equal(t, 1, run(context.Background(), []string{"sink", "--addr", "256.0.0.1:1"}, io.Discard, &errb))

	// A rehearsal of a failing core service: every request gets 503.
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- runSinkArgs(ctx, []string{"--addr", "127.0.0.1:0", "--status", "503"}, &out, io.Discard, ready)
	}()
	addr := <-ready
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader(`{"id":"evt_1"}`))
	req.Header.Set("Idempotency-Key", "stripe:evt_1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.JSONEq(t, `{"error":"webhookd sink answers 503 (--status)"}`, string(body))
	cancel()
	require.Zero(t, <-done)
	require.Contains(t, out.String(), "Idempotency-Key=stripe:evt_1")
	require.Contains(t, out.String(), "body=14B -> 503")
}

func TestHelpListsTheCommands(t *testing.T) {
	var out bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"help"}, &out, io.Discard))
	for _, c := range []string{"serve", "replay", "sink", "keys", "WEBHOOKD_CAPTURE_DIR"} {
		require.Contains(t, out.String(), c)
	}
	for _, c := range []string{"replay", "sink", "keys"} {
		var o, e bytes.Buffer
		require.Zero(t, run(context.Background(), []string{c, "-h"}, &o, &e), c)
		require.Contains(t, o.String()+e.String(), "Usage: webhookd "+c, c)
	}
}

// TestKeysListSaysWhenEmpty: an empty listing says so on stderr, exit 0,
// and leaves stdout empty for scripts (table and JSON Lines alike).
func TestKeysListSaysWhenEmpty(t *testing.T) {
	empty := t.TempDir()
	s, err := lmdb.Open(empty, lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	seeded := t.TempDir()
	seedStore(t, seeded, 1)
	tests := []struct {
		dir  string
		args []string
		want string
	}{
		{empty, []string{"list"}, "webhookd keys list: no records\n"},
		{empty, []string{"list", "--json"}, "webhookd keys list: no records\n"},
		{seeded, []string{"list", "--provider", "midtrans", "--state", "FAILED"}, "webhookd keys list: no records matching --provider midtrans --state FAILED\n"},
	}
	for _, tt := range tests {
		out, errOut, code := keysCmd(t, tt.dir, tt.args...)
		require.Zero(t, code, errOut)
		require.Empty(t, out)
		require.Equal(t, tt.want, errOut)
	}
}
