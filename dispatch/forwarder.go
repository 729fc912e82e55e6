package dispatch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/webhookverify"
)

// MaxResponseBytes is how much of the core service's response body a Result
// carries; the rest is discarded. It is what the dedupe store keeps to
// replay to the provider, so that the first answer and its replays agree,
// and reading more would only cost memory.
const MaxResponseBytes = dedupe.MaxStoredBody

// Defaults for the wait between attempts, used when Options leaves them zero.
// They are short because the whole budget (WEBHOOKD_DISPATCH_TIMEOUT) is
// seconds, and the provider is waiting on the other end of the connection.
const (
	DefaultRetryWaitMin = 100 * time.Millisecond
	DefaultRetryWaitMax = 2 * time.Second
)

// defaultContentType is sent when the delivery had no Content-Type: every
// provider webhookd supports posts JSON.
const defaultContentType = "application/json"

// userAgent identifies webhookd in the core service's access logs.
const userAgent = "webhookd"

// ErrInvalidOptions is wrapped by every error New returns, so that
// configuration code can tell a bad setting from any other failure.
var ErrInvalidOptions = errors.New("dispatch: invalid options")

// Request is one delivery to forward. The receiver fills it from a verified
// provider callback whose event key it has claimed.
type Request struct {
	// Source is the source's name, sent as Webhook-Source.
	Source string
	// Provider is the provider's name, sent as Webhook-Provider.
	Provider string
	// IdempotencyKey is "<source>:<event-key>" (dedupe.Key.ID), sent as
	// Idempotency-Key so the core service can dedupe forwards of the same
	// event too; the same for every destination of the event.
	IdempotencyKey string
	// EventKey is the provider's event key, sent as Webhook-Event-Id.
	EventKey string
	// EventType is sent as Webhook-Event-Type; it is omitted when empty.
	EventType string
	// ContentType is the provider's Content-Type; application/json when
	// empty.
	ContentType string
	// Body is the provider's raw body. It is sent byte for byte and never
	// modified, so it may be shared with the caller.
	Body []byte
}

// Result is what became of one Forward call. Forward reports every failure
// here rather than as a separate error, because a failure is an ordinary
// Outcome the receiver has to answer for.
type Result struct {
	// Outcome is the classification of the last answer (see Classify).
	Outcome Outcome
	// Status is the last HTTP status the core service answered, or 0 if it
	// never answered.
	Status int
	// ContentType is the Content-Type of the core service's last response.
	ContentType string
	// Body is the core service's last response body, cut to
	// MaxResponseBytes.
	Body []byte
	// Attempts is how many requests were sent (or tried), retries included.
	// Each attempt is handed to the transport once and never resent by it
	// (see sendOnce), so no more requests than this reach the core service.
	Attempts int
	// Err is the error that prevented an answer (connection failure,
	// timeout) or broke its body after the status line (the connection
	// closed short of the Content-Length, the body stalled past Timeout).
	// A broken body does not change the Outcome, which Status decides (see
	// Classify); Body then holds what arrived. Err is nil otherwise. Its
	// message never holds the core service URL's query or user information
	// (see RedactURL), so it may be logged.
	Err error
	// Duration is how long Forward took, every attempt and wait included.
	Duration time.Duration
}

// Options configures a Forwarder. URL and Timeout are required.
type Options struct {
	// URL is the core service endpoint (WEBHOOKD_DOWNSTREAM_URL); it must
	// be an absolute http or https URL.
	URL string
	// Timeout is the total budget for one Forward, every attempt and every
	// wait between attempts included (WEBHOOKD_DISPATCH_TIMEOUT). The
	// provider is holding its connection open for this long.
	Timeout time.Duration
	// Retries is how many attempts may follow the first one, within Timeout
	// (WEBHOOKD_DISPATCH_RETRIES).
	Retries int
	// Logger receives Debug records about attempts and retries; nil means no
	// logging at all. Nothing is logged above Debug.
	Logger *slog.Logger
	// Transport replaces the default pooled transport; tests use it.
	Transport http.RoundTripper
	// RetryWaitMin and RetryWaitMax bound the exponential wait between
	// attempts; zero means DefaultRetryWaitMin and DefaultRetryWaitMax. A
	// Retry-After from the core service is honoured only while it fits in
	// what is left of Timeout.
	RetryWaitMin, RetryWaitMax time.Duration
	// SigningSecrets, when not empty, make every forwarded request carry a
	// Standard Webhooks signature (webhook-id: the Idempotency-Key,
	// webhook-timestamp, webhook-signature) with one v1 signature per secret,
	// so that the core service can rotate (WEBHOOKD_DOWNSTREAM_SECRET). See
	// package webhookverify for the format and the secret encoding; each
	// key must be at least MinSigningKeyBytes long.
	SigningSecrets []string
	// Now is the clock that timestamps signatures; time.Now if nil.
	Now func() time.Time
	// Tracer, if set, records a span for each attempt, a child of the span
	// in Forward's context, and sends the core service that span as a W3C
	// traceparent on the attempt (package tracing). Nil records nothing and
	// sends no traceparent.
	Tracer trace.Tracer
	// Propagator writes the trace headers of each attempt;
	// propagation.TraceContext (traceparent, tracestate) if nil.
	Propagator propagation.TextMapPropagator
	// Headers are sent with every forward besides Request.SetHeaders'
	// (a destination's headers in WEBHOOKD_CONFIG: a bearer token); they
	// never replace one of those.
	Headers http.Header
}

// Forwarder sends deliveries to the core service. It is safe for concurrent
// use, and should be shared so that connections to the core service are
// reused.
type Forwarder struct {
	url       string
	timeout   time.Duration
	retries   int
	waitMin   time.Duration
	waitMax   time.Duration
	log       *slog.Logger
	client    *retryablehttp.Client
	transport http.RoundTripper
	tracer    trace.Tracer
	prop      propagation.TextMapPropagator
	host      string // the core service's host, for spans
	signer    *webhookverify.Signer
	clock     func() time.Time
	headers   http.Header

	// redacted is url fit for logs; urlSpellings are the forms of url that
	// errors may quote.
	redacted     string
	urlSpellings []string
}

// New checks opts and returns a Forwarder. It does not contact the core
// service: webhookd must start, and answer 503 to providers, while the core
// service is down.
func New(opts Options) (*Forwarder, error) {
	if err := validURL(opts.URL); err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		return nil, fmt.Errorf("%w: timeout must be positive, got %s", ErrInvalidOptions, opts.Timeout)
	}
	if opts.Retries < 0 {
		return nil, fmt.Errorf("%w: retries must not be negative, got %d", ErrInvalidOptions, opts.Retries)
	}
	if opts.RetryWaitMin < 0 || opts.RetryWaitMax < 0 {
		return nil, fmt.Errorf("%w: retry waits must not be negative", ErrInvalidOptions)
	}
	waitMin, waitMax := opts.RetryWaitMin, opts.RetryWaitMax
	if waitMin == 0 {
		waitMin = DefaultRetryWaitMin
	}
	if waitMax == 0 {
		waitMax = max(DefaultRetryWaitMax, waitMin)
	}
	if waitMin > waitMax {
		return nil, fmt.Errorf("%w: retry wait min %s exceeds max %s", ErrInvalidOptions, waitMin, waitMax)
	}

	f := &Forwarder{
		url:      opts.URL,
		timeout:  opts.Timeout,
		retries:  opts.Retries,
		waitMin:  waitMin,
		waitMax:  waitMax,
		log:      opts.Logger,
		clock:    opts.Now,
		redacted: RedactURL(opts.URL),
	}
	if len(opts.Headers) > 0 {
		f.headers = opts.Headers.Clone()
	}
	f.urlSpellings = []string{opts.URL}
	if u, err := url.Parse(opts.URL); err == nil {
		f.host = u.Hostname()
		if u.String() != opts.URL {
			f.urlSpellings = append(f.urlSpellings, u.String())
		}
	}
	if opts.Tracer != nil {
		f.tracer, f.prop = opts.Tracer, opts.Propagator
		if f.prop == nil {
			f.prop = propagation.TraceContext{}
		}
	}
	if len(opts.SigningSecrets) > 0 {
		signer, err := webhookverify.NewSigner(opts.SigningSecrets...)
		if err != nil {
			return nil, fmt.Errorf("%w: downstream signing %v", ErrInvalidOptions, err)
		}
		if n := signer.MinKeyBytes(); n < MinSigningKeyBytes {
			return nil, fmt.Errorf("%w: a downstream signing key is %d bytes; at least %d are needed", ErrInvalidOptions, n, MinSigningKeyBytes)
		}
		f.signer = signer
	}
	rt := opts.Transport
	if rt == nil {
		rt = newTransport()
	}
	f.transport = rt
	f.client = f.newClient(&http.Client{
		Transport: sendOnce{rt},
		// No Timeout: Forward puts the budget on every request's context,
		// which bounds each attempt and its body as well, whatever the
		// caller's context. A Client.Timeout on top would only arm a second
		// timer and cancel context per attempt (net/http's setRequestCancel).
		// A redirect from the core service is a misconfigured URL; following
		// it would POST the event somewhere nobody configured. The 3xx is
		// returned as it is and classified Unavailable.
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	})
	return f, nil
}

func validURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the URL, which may hold a credential; say only
		// what is wrong with it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%w: downstream URL does not parse: %v", ErrInvalidOptions, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: downstream URL must be absolute http or https, got scheme %q", ErrInvalidOptions, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("%w: downstream URL has no host", ErrInvalidOptions)
	}
	return nil
}

// newTransport returns a transport of our own rather than
// http.DefaultTransport, so that nothing else in the process shares (or
// tunes) the pool, and with an idle pool large enough that concurrent
// deliveries reuse connections instead of opening new ones.
func newTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// URL returns the core service endpoint the Forwarder posts to. Log
// RedactedURL instead: this one may hold a credential.
func (f *Forwarder) URL() string { return f.url }

// RedactedURL returns URL without its query and user information, for logs.
func (f *Forwarder) RedactedURL() string { return f.redacted }

// Signed reports whether forwards carry a Standard Webhooks signature.
func (f *Forwarder) Signed() bool { return f.signer != nil }

// CloseIdleConnections closes pooled connections to the core service; call
// it on shutdown.
func (f *Forwarder) CloseIdleConnections() {
	if ci, ok := f.transport.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// sendOnce is the RoundTripper under the http.Client that retryablehttp
// drives. It does two things to the transport it wraps.
//
// It hides the transport's CloseIdleConnections: retryablehttp closes the
// client's idle connections whenever one request gives up, which on a shared
// pool would drop the warm connections of every other delivery in flight.
//
// And it makes each request reach the core service at most once per
// attempt, so that Result.Attempts counts what the core service received.
// net/http's Transport resends a request on its own, unseen by
// retryablehttp, when a reused keep-alive connection fails after the request
// was written and the request is "replayable": one with an Idempotency-Key
// header is, as long as its body can be rewound through GetBody (see
// net/http's Request.isReplayable and persistConn.shouldRetryRequest).
// retryablehttp sets GetBody on every attempt, so clearing it beforehand
// does nothing; it is cleared here, on a copy, just before the transport
// sees the request. The failure then comes back to retryablehttp, which
// retries it within the budget and the Retries setting, and counts it.
type sendOnce struct{ rt http.RoundTripper }

// RoundTrip hands r to the wrapped transport without its GetBody.
func (s sendOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.GetBody != nil {
		// A RoundTripper must not modify its request; a shallow copy is
		// enough, since only GetBody differs.
		c := *r
		c.GetBody = nil
		r = &c
	}
	return s.rt.RoundTrip(r)
}

// Forward POSTs req to the core service, retrying transient failures within
// the Timeout budget (derived from ctx, so a caller's earlier deadline or
// cancellation wins), and reports the last answer. It never returns early
// with a half-read response: the response body is read (up to
// MaxResponseBytes) and closed before Forward returns.
func (f *Forwarder) Forward(ctx context.Context, req Request) Result {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()

	// The call is the request's context: the hooks find this Forward's
	// state in it (attempts.go). A []byte body lets retryablehttp replay
	// it, unchanged, on every attempt.
	c := &call{Context: ctx, req: req}
	rreq, err := retryablehttp.NewRequestWithContext(c, http.MethodPost, f.url, req.Body)
	if err != nil {
		return Result{Outcome: Unavailable, Err: f.redactErr(err), Duration: time.Since(start)}
	}
	req.SetHeaders(rreq.Header)
	for name, values := range f.headers {
		if _, set := rreq.Header[name]; !set {
			rreq.Header[name] = values
		}
	}
	f.sign(rreq.Header, req)

	resp, err := f.client.Do(rreq)
	f.endAttempt(c, resp, err) // checkRetry has, unless the library returned early
	res := Result{Attempts: c.attempts, Status: c.lastStatus}
	if resp != nil {
		res.Status = resp.StatusCode
		res.ContentType = resp.Header.Get("Content-Type")
		var readErr error
		res.Body, readErr = readBody(resp.Body, resp.ContentLength)
		if err == nil {
			err = readErr
		}
	}
	res.Err = f.redactErr(err)
	res.Outcome = Classify(res.Status, err)
	res.Duration = time.Since(start)
	return res
}

// readBody keeps the first MaxResponseBytes of body, discards a bounded
// amount more so the connection can be reused, and closes it. Past that
// bound, closing is cheaper than reading on. size is the response's
// Content-Length (-1 if unknown): one that fits sizes the buffer, one byte
// over so that the read that meets EOF has room, instead of io.ReadAll's
// 512 bytes and growth, and the reads need no io.LimitReader (the core
// service's answers are a few bytes: this is one allocation instead of
// three).
func readBody(body io.ReadCloser, size int64) ([]byte, error) {
	defer body.Close()
	c := 512
	if size >= 0 && size < MaxResponseBytes {
		c = int(size) + 1
	}
	b := make([]byte, 0, c)
	for len(b) < MaxResponseBytes {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow, as io.ReadAll does
		}
		n, err := body.Read(b[len(b):min(cap(b), MaxResponseBytes)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(body, MaxResponseBytes))
	return b, nil
}

// permanentTransportError reports failures that another attempt cannot fix
// within the budget: the core service's certificate is not trusted.
func permanentTransportError(err error) bool {
	if err == nil {
		return false
	}
	var unknownAuthority x509.UnknownAuthorityError
	var verification *tls.CertificateVerificationError
	return errors.As(err, &unknownAuthority) || errors.As(err, &verification)
}
