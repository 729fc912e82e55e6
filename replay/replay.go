// Package replay sends fixture files (raw provider request bodies) to a
// running webhookd, each signed the way its provider signs a delivery, and
// summarises the answers: `webhookd replay`.
//
// It is a client of the receiver's HTTP routes and nothing else: it must
// never open the dedupe store or call the core service, and never print a
// secret, a signature or a body (a failing answer's "error" message is
// shown, which the receiver builds from its sentinel errors).
package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// DefaultTimeout bounds one request when Options.Timeout is zero: longer
// than a receiver's default dispatch budget (10s with retries), so that a
// slow core service shows as the receiver's 503 rather than as a timeout
// here.
const DefaultTimeout = 30 * time.Second

// maxAnswerBytes is how much of an answer is read: enough for the
// receiver's error message; the rest is discarded.
const maxAnswerBytes = 64 << 10

// ErrNoSigner is wrapped by Run's error when a fixture's provider has no
// signer in Options.Signers.
var ErrNoSigner = errors.New("replay: no signer for provider")

// Options configure Run.
type Options struct {
	// URL is the receiver's base URL (http://localhost:8080); a fixture of
	// provider p is posted to URL/webhooks/p.
	URL string
	// Signers signs each provider's fixtures, by provider name.
	Signers map[string]providers.Signer
	// Verifiers are the adapters of providers that cannot be signed for
	// locally (only PayPal holds PayPal's key), by provider name. Their
	// fixtures are sent with the headers they were captured with
	// (Fixture.Header), after each is verified here as the receiver will:
	// one that does not verify with the local configuration (another
	// webhook id, a certificate host not allowed, no signature) is skipped,
	// and the report says why.
	Verifiers map[string]providers.Provider
	// Repeat sends each fixture this many times (1 if zero), as a provider
	// retrying, or a storm of duplicates, would.
	Repeat int
	// Concurrency is how many requests are in flight at once (1 if zero).
	// The copies of one fixture are queued next to each other, so with
	// Concurrency > 1 they arrive together.
	Concurrency int
	// Timeout bounds each request, answer included (DefaultTimeout if
	// zero).
	Timeout time.Duration
	// Client replaces the HTTP client built from Timeout; tests use it.
	Client *http.Client
	// IDSuffix, when not empty, is appended to the event id of every
	// fixture replay signs (FreshID), so that a run with a suffix not used
	// before is a new set of events to the receiver rather than replays
	// from its store. Fixtures sent with captured headers (PayPal's) are
	// left alone: their signature covers the body as captured.
	IDSuffix string
}

// Result is the answer to one request.
type Result struct {
	// Fixture indexes Report.Fixtures.
	Fixture int
	// Status is the HTTP status, 0 when the request failed in transport.
	Status int
	// Replayed is set when the receiver answered from its store
	// (Idempotent-Replayed: true): the core service was not called.
	Replayed bool
	// Message is the "error" field of a JSON error answer, if any.
	Message string
	// Err is the transport error (connection refused, timeout).
	Err error
	// Latency is the time from sending to the end of the answer (or the
	// failure).
	Latency time.Duration
}

// OK reports whether the answer is one a user's CI accepts: a 2xx (fresh or
// replayed) or a 409 (the same event is in flight, which a duplicate storm
// is expected to produce).
func (r Result) OK() bool {
	return r.Err == nil && (r.Status >= 200 && r.Status < 300 || r.Status == http.StatusConflict)
}

// Report is what Run did.
type Report struct {
	Fixtures []Fixture
	// Results holds one Result per request sent, in completion order.
	Results []Result
	// Planned is the number of requests Run meant to send
	// (len(Fixtures) × Repeat, less the skipped fixtures'); fewer were sent
	// if it was interrupted.
	Planned int
	// Skipped says, by index into Fixtures, why a fixture was not sent:
	// its captured headers do not verify with the local configuration.
	Skipped     map[int]string
	Repeat      int
	Concurrency int
	Elapsed     time.Duration
}

// OK reports whether every planned request was sent and answered OK.
func (r *Report) OK() bool {
	if len(r.Results) != r.Planned {
		return false
	}
	for _, res := range r.Results {
		if !res.OK() {
			return false
		}
	}
	return true
}

// Check validates opts against fixtures without sending anything: the URL
// is an absolute http(s) base URL, and every fixture's provider has a
// signer that accepts its body. Run calls it first.
func Check(fixtures []Fixture, opts Options) error {
	if _, err := baseURL(opts.URL); err != nil {
		return err
	}
	if opts.Repeat < 0 || opts.Concurrency < 0 || opts.Timeout < 0 {
		return errors.New("replay: repeat, concurrency and timeout must not be negative")
	}
	for _, f := range fixtures {
		s := opts.Signers[f.Provider]
		if s == nil && opts.Verifiers[f.Provider] != nil {
			if f.Header == nil {
				return fmt.Errorf("replay: %s: only %s can sign its deliveries, and no captured headers are beside it (%s)",
					f.Path, f.Provider, strings.TrimSuffix(f.Path, filepath.Ext(f.Path))+HeadersSuffix)
			}
			continue
		}
		if s == nil {
			return fmt.Errorf("%w %q (fixture %s)", ErrNoSigner, f.Provider, f.Path)
		}
		if _, err := s.Sign(f.Body); err != nil {
			return fmt.Errorf("replay: %s: cannot sign as %s: %w", f.Path, f.Provider, err)
		}
	}
	return nil
}

// baseURL parses the receiver's base URL, without a trailing slash.
func baseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("replay: --url %q is not an absolute http(s) URL such as http://localhost:8080", raw)
	}
	if strings.Contains(u.Path, "/webhooks/") || strings.HasSuffix(u.Path, "/webhooks") {
		return "", fmt.Errorf("replay: --url %q: give the receiver's base URL (http://host:port); replay adds /webhooks/<provider>", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Run sends every fixture Repeat times, Concurrency at a time, and reports
// the answers. It returns an error, having sent nothing, when Check fails.
// When ctx ends it stops sending and reports what was answered so far.
func Run(ctx context.Context, fixtures []Fixture, opts Options) (*Report, error) {
	fixtures, err := withFreshIDs(fixtures, opts)
	if err != nil {
		return nil, err
	}
	if err := Check(fixtures, opts); err != nil {
		return nil, err
	}
	base, _ := baseURL(opts.URL)
	repeat, conc := max(opts.Repeat, 1), max(opts.Concurrency, 1)
	client := opts.Client
	if client == nil {
		client = newClient(opts.Timeout, conc)
	}
	rep := &Report{Fixtures: fixtures, Repeat: repeat, Concurrency: conc, Skipped: checkCaptured(ctx, fixtures, opts)}
	rep.Planned = (len(fixtures) - len(rep.Skipped)) * repeat

	jobs := make(chan int)
	results := make(chan Result)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				f := fixtures[i]
				results <- send(ctx, client, base, opts.Signers[f.Provider], i, f)
			}
		}()
	}
	go func() {
		defer close(jobs)
		// Fixture-major order: the copies of one fixture go out together.
		for i := range fixtures {
			if _, skip := rep.Skipped[i]; skip {
				continue
			}
			for range repeat {
				select {
				case jobs <- i:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()

	start := time.Now()
	for res := range results {
		rep.Results = append(rep.Results, res)
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// newClient is the default client: bounded per request, a connection per
// concurrent sender kept warm, and redirects not followed (a receiver does
// not redirect; a 3xx means the URL is wrong, and counts as a failure).
func newClient(timeout time.Duration, conc int) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conc
	return &http.Client{
		Timeout:   timeout,
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// checkCaptured verifies, as the receiver will, each fixture that is sent
// with its captured headers, and returns why those that fail are skipped.
// Each check is bounded like a request (it may fetch a certificate).
func checkCaptured(ctx context.Context, fixtures []Fixture, opts Options) map[int]string {
	skipped := map[int]string{}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	for i, f := range fixtures {
		p := opts.Verifiers[f.Provider]
		if p == nil || opts.Signers[f.Provider] != nil {
			continue
		}
		checkCtx, cancel := context.WithTimeout(ctx, timeout)
		err := p.Verify(checkCtx, providers.Delivery{Header: f.Header.Clone(), Body: f.Body})
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, providers.ErrUnavailable):
			skipped[i] = "its captured headers could not be checked: " + err.Error()
		default:
			skipped[i] = "its captured headers do not verify with the local configuration: " + err.Error()
		}
	}
	return skipped
}

// send signs f afresh (a new timestamp, as the provider's own retry would
// carry) and posts it; with no signer, it posts f with its captured
// headers.
func send(ctx context.Context, client *http.Client, base string, s providers.Signer, i int, f Fixture) (res Result) {
	res.Fixture = i
	start := time.Now()
	defer func() { res.Latency = time.Since(start) }()
	body, header, target := f.Body, f.Header.Clone(), base+"/webhooks/"+url.PathEscape(f.Provider)
	if s != nil {
		signed, err := s.Sign(f.Body)
		if err != nil {
			res.Err = fmt.Errorf("sign: %w", err)
			return res
		}
		body, header = signed.Body, signed.Header
		// A gateway may sign a query value (Mercado Pago's data.id).
		if len(signed.Query) > 0 {
			target += "?" + signed.Query.Encode()
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		res.Err = err
		return res
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if req.Header.Get("Content-Type") == "" {
		// JSON unless the provider posts otherwise (Duitku's Sign sets
		// its form type).
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "webhookd-replay")
	resp, err := client.Do(req)
	if err != nil {
		res.Err = err
		return res
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
	res.Status = resp.StatusCode
	res.Replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	if err != nil {
		res.Err = fmt.Errorf("reading the answer: %w", err)
		return res
	}
	if !res.OK() {
		res.Message = errorMessage(answer)
	}
	return res
}

// errorMessage returns the "error" field of a JSON error answer, cut short
// and stripped of control characters, or "". Only failing answers are
// looked at: a 2xx body is the core service's and is not ours to print.
func errorMessage(answer []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(answer, &e) != nil {
		return ""
	}
	msg := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, e.Error)
	if r := []rune(msg); len(r) > 200 {
		msg = string(r[:200]) + "..."
	}
	return msg
}

// latencies returns the sorted latencies of rs.
func latencies(rs []Result) []time.Duration {
	out := make([]time.Duration, len(rs))
	for i, r := range rs {
		out[i] = r.Latency
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
