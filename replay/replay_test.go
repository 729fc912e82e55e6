package replay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
)

const secret = "whsec_replay_test"

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
}

func stripeEvent(id string) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1"}}}`, id)
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	stripeDir := filepath.Join(dir, "stripe")
	writeFile(t, filepath.Join(stripeDir, "b.json"), stripeEvent("evt_b"))
	writeFile(t, filepath.Join(stripeDir, "a.json"), stripeEvent("evt_a"))
	writeFile(t, filepath.Join(stripeDir, "notes.txt"), "not a fixture")
	writeFile(t, filepath.Join(stripeDir, ".capture-123.tmp"), "being written")
	writeFile(t, filepath.Join(stripeDir, ".hidden.json"), "hidden")
	writeFile(t, filepath.Join(stripeDir, "nested", "c.json"), stripeEvent("evt_c"))
	writeFile(t, filepath.Join(dir, "misc", "raw.body"), stripeEvent("evt_raw"))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "empty"), 0o755))
	writeFile(t, filepath.Join(dir, "blank", "zero.json"), "")

	t.Run("folder gives its *.json files in name order, provider from the folder", func(t *testing.T) {
		fs, err := Load([]string{stripeDir}, "")
		require.NoError(t, err)
		require.Len(t, fs, 2)
		require.Equal(t, filepath.Join(stripeDir, "a.json"), fs[0].Path)
		require.Equal(t, filepath.Join(stripeDir, "b.json"), fs[1].Path)
		require.Equal(t, "stripe", fs[0].Provider)
		require.Equal(t, stripeEvent("evt_a"), string(fs[0].Body))
	})
	t.Run("a file named twice is loaded once; any extension when named", func(t *testing.T) {
		raw := filepath.Join(dir, "misc", "raw.body")
		fs, err := Load([]string{stripeDir, filepath.Join(stripeDir, "a.json"), raw}, "")
		require.NoError(t, err)
		require.Len(t, fs, 3)
		require.Equal(t, "misc", fs[2].Provider)
	})
	t.Run("--provider overrides the folder name", func(t *testing.T) {
		fs, err := Load([]string{filepath.Join(dir, "misc", "raw.body")}, "stripe")
		require.NoError(t, err)
		require.Equal(t, "stripe", fs[0].Provider)
	})
	t.Run("errors", func(t *testing.T) {
		_, err := Load(nil, "")
		require.ErrorIs(t, err, ErrNoFixtures)
		_, err = Load([]string{filepath.Join(dir, "empty")}, "")
		require.ErrorIs(t, err, ErrNoFixtures)
		require.ErrorContains(t, err, "empty")
		_, err = Load([]string{filepath.Join(dir, "nope.json")}, "")
		require.ErrorIs(t, err, os.ErrNotExist)
		_, err = Load([]string{filepath.Join(dir, "blank")}, "")
		require.ErrorContains(t, err, "empty file")
	})
}

// receiverStub answers each request with the status answer returns, after
// checking that it is signed and shaped as webhookd expects.
type receiverStub struct {
	*httptest.Server
	requests atomic.Int32
	bad      atomic.Value // first problem seen, a string
}

func newReceiverStub(t *testing.T, answer func(r *http.Request) (int, http.Header, string)) *receiverStub {
	ad, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
	require.NoError(t, err)
	s := &receiverStub{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/webhooks/stripe":
			s.bad.CompareAndSwap(nil, "request to "+r.Method+" "+r.URL.Path)
		case r.Header.Get("Content-Type") != "application/json":
			s.bad.CompareAndSwap(nil, "Content-Type "+r.Header.Get("Content-Type"))
		case ad.Verify(context.Background(), providers.Delivery{Header: r.Header, Body: body}) != nil:
			s.bad.CompareAndSwap(nil, "signature does not verify")
		}
		status, h, b := answer(r)
		for k, v := range h {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, b)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *receiverStub) requireWellFormed(t *testing.T) {
	t.Helper()
	if bad := s.bad.Load(); bad != nil {
		t.Fatalf("receiver saw a malformed request: %s", bad)
	}
}

func signers(t *testing.T) map[string]providers.Signer {
	ad, err := spec.NewBuiltin("stripe", []string{secret, "whsec_old"}, nil, nil)
	require.NoError(t, err)
	return map[string]providers.Signer{"stripe": ad}
}

func fixtures(n int) []Fixture {
	out := make([]Fixture, n)
	for i := range out {
		out[i] = Fixture{Path: fmt.Sprintf("stripe/%d.json", i), Provider: "stripe", Body: []byte(stripeEvent(fmt.Sprintf("evt_%d", i)))}
	}
	return out
}

func TestRunOKDependsOnTheAnswers(t *testing.T) {
	tests := []struct {
		status   int
		replayed bool
		ok       bool
	}{
		{200, false, true},
		{201, false, true},
		{204, true, true},
		{409, false, true},
		{400, false, false},
		{401, false, false},
		{404, false, false},
		{422, false, false},
		{302, false, false},
		{500, false, false},
		{503, false, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			stub := newReceiverStub(t, func(*http.Request) (int, http.Header, string) {
				h := http.Header{"Content-Type": {"application/json"}, "Location": {"/elsewhere"}}
				if tt.replayed {
					h.Set("Idempotent-Replayed", "true")
				}
				return tt.status, h, `{"error":"some reason"}`
			})
			rep, err := Run(context.Background(), fixtures(2), Options{URL: stub.URL, Signers: signers(t)})
			require.NoError(t, err)
			stub.requireWellFormed(t)
			require.EqualValues(t, 2, stub.requests.Load(), "redirects are not followed")
			require.Len(t, rep.Results, 2)
			require.Equal(t, tt.ok, rep.OK())
			for _, r := range rep.Results {
				require.Equal(t, tt.status, r.Status)
				require.Equal(t, tt.replayed, r.Replayed)
				if !tt.ok {
					require.Equal(t, "some reason", r.Message)
				}
			}
		})
	}
}

func TestRunTransportFailure(t *testing.T) {
	stub := newReceiverStub(t, func(*http.Request) (int, http.Header, string) { return 200, nil, "" })
	url := stub.URL
	stub.Close() // nothing listens there any more
	rep, err := Run(context.Background(), fixtures(1), Options{URL: url, Signers: signers(t)})
	require.NoError(t, err)
	require.False(t, rep.OK())
	require.Len(t, rep.Results, 1)
	require.Error(t, rep.Results[0].Err)
	require.Zero(t, rep.Results[0].Status)
}

func TestRunTimeoutIsBounded(t *testing.T) {
	release := make(chan struct{})
	stub := newReceiverStub(t, func(r *http.Request) (int, http.Header, string) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return 200, nil, ""
	})
	defer close(release)
	start := time.Now()
	rep, err := Run(context.Background(), fixtures(1), Options{URL: stub.URL, Signers: signers(t), Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	require.False(t, rep.OK())
	require.Error(t, rep.Results[0].Err)
	require.Less(t, time.Since(start), 5*time.Second)
}

// TestRunRepeatAndConcurrency: every fixture is sent Repeat times, and the
// copies of one fixture are in flight together. The stub holds each request
// until Concurrency of them are waiting; a sender that sent one at a time
// would never get there, and would fail on the stub's long timeout.
func TestRunRepeatAndConcurrency(t *testing.T) {
	const repeat, conc = 4, 4
	var (
		mu       sync.Mutex
		inFlight int
		peak     int
		perEvent = map[string]int{}
		gate     = make(chan struct{})
		once     sync.Once
	)
	stub := newReceiverStub(t, func(r *http.Request) (int, http.Header, string) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		if inFlight == conc {
			once.Do(func() { close(gate) })
		}
		mu.Unlock()
		select {
		case <-gate:
		case <-time.After(10 * time.Second):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return 201, nil, ""
	})
	fs := fixtures(3)
	rep, err := Run(context.Background(), fs, Options{URL: stub.URL + "/", Signers: signers(t), Repeat: repeat, Concurrency: conc})
	require.NoError(t, err)
	stub.requireWellFormed(t)
	require.True(t, rep.OK())
	require.Len(t, rep.Results, len(fs)*repeat)
	require.Equal(t, conc, peak, "never more than Concurrency in flight, and that many at once")
	for _, r := range rep.Results {
		perEvent[rep.Fixtures[r.Fixture].Path]++
		require.Less(t, r.Latency, 10*time.Second, "the gate opened: requests were concurrent")
	}
	for _, f := range fs {
		require.Equal(t, repeat, perEvent[f.Path])
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stub := newReceiverStub(t, func(*http.Request) (int, http.Header, string) {
		cancel() // the user presses Ctrl-C during the first request
		return 200, nil, ""
	})
	rep, err := Run(ctx, fixtures(5), Options{URL: stub.URL, Signers: signers(t)})
	require.NoError(t, err)
	require.Less(t, len(rep.Results), 5)
	require.False(t, rep.OK())
	var out bytes.Buffer
	require.NoError(t, rep.WriteSummary(&out))
	require.Contains(t, out.String(), "interrupted")
}

func TestCheckSendsNothingOnError(t *testing.T) {
	stub := newReceiverStub(t, func(*http.Request) (int, http.Header, string) { return 200, nil, "" })
	fs := append(fixtures(1), Fixture{Path: "midtrans/x.json", Provider: "midtrans", Body: []byte(`{}`)})
	_, err := Run(context.Background(), fs, Options{URL: stub.URL, Signers: signers(t)})
	require.ErrorIs(t, err, ErrNoSigner)
	require.ErrorContains(t, err, `"midtrans"`)

	for _, u := range []string{"", "localhost:8080", "ftp://host", stub.URL + "/webhooks/stripe", "http://"} {
		_, err := Run(context.Background(), fixtures(1), Options{URL: u, Signers: signers(t)})
		require.Error(t, err, u)
	}
	require.Zero(t, stub.requests.Load())
}

func TestPercentile(t *testing.T) {
	ds := func(ms ...int) []time.Duration {
		out := make([]time.Duration, len(ms))
		for i, m := range ms {
			out[i] = time.Duration(m) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		sorted []time.Duration
		p      int
		want   time.Duration
	}{
		{ds(7), 50, 7 * time.Millisecond},
		{ds(7), 95, 7 * time.Millisecond},
		{ds(1, 2), 50, 1 * time.Millisecond},
		{ds(1, 2, 3), 50, 2 * time.Millisecond},
		{ds(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{ds(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20), 95, 19 * time.Millisecond},
		{ds(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21), 95, 20 * time.Millisecond},
		{nil, 50, 0},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, percentile(tt.sorted, tt.p), "%v p%d", tt.sorted, tt.p)
	}
}

func TestWriteSummary(t *testing.T) {
	fs := fixtures(3)
	rep := &Report{Fixtures: fs, Planned: 6, Repeat: 2, Concurrency: 2, Elapsed: 42 * time.Millisecond, Results: []Result{
		{Fixture: 0, Status: 201, Latency: 10 * time.Millisecond},
		{Fixture: 0, Status: 409, Latency: 2 * time.Millisecond},
		{Fixture: 1, Status: 201, Replayed: true, Latency: 3 * time.Millisecond},
		{Fixture: 1, Status: 201, Replayed: true, Latency: 4 * time.Millisecond},
		{Fixture: 2, Status: 401, Message: "stripe: no valid signature", Latency: 1 * time.Millisecond},
		{Fixture: 2, Err: fmt.Errorf("connection refused"), Latency: 5 * time.Millisecond},
	}}
	var out bytes.Buffer
	require.NoError(t, rep.WriteSummary(&out))
	got := out.String()
	lines := strings.Split(got, "\n")
	want := []string{
		"stripe/0.json  stripe    201 x1, 409 x1",
		"stripe/1.json  stripe    201 replayed x2",
		"stripe/2.json  stripe    401 (stripe: no valid signature) x1, error (connection refused) x1",
		"201     3      2         3.0ms  4.0ms   10.0ms  10.0ms",
		"401     1      0         1.0ms  1.0ms   1.0ms   1.0ms",
		"409     1      0         2.0ms  2.0ms   2.0ms   2.0ms",
		"error   1      0         5.0ms  5.0ms   5.0ms   5.0ms",
		"6 requests (3 fixtures x 2, 2 at a time) in 42.0ms: 4 OK (2xx or 409), 2 failed",
	}
	for _, w := range want {
		require.Contains(t, lines, w, "summary:\n%s", got)
	}
	require.False(t, rep.OK())
}
