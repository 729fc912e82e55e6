package dispatch

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// One retryablehttp.Client serves every Forward; what belongs to one
// Forward (its attempts, its last status, the span of the attempt on the
// wire, the request to sign again) lives in a call, which is the request's
// context, so that each hook finds it in the request or the context
// retryablehttp hands it. The library's hooks are used as it names them:
//
//   - RequestLogHook runs before each attempt: it counts the attempt,
//     starts the attempt's span and puts the span's traceparent on the
//     attempt's headers (their own map, see prepareRetry).
//   - CheckRetry runs after each attempt, answered or not: it ends the
//     attempt's span and decides (checkRetry).
//   - Backoff is the library's DefaultBackoff, and PrepareRetry signs each
//     retry afresh.
//   - Logger is nil: the library logs nothing (its records hold the URL,
//     whose query may carry a token); the hooks log at Debug, with the URL
//     redacted.
//
// What is still ours around it: sendOnce, under the http.Client (the
// library closes the client's idle connections whenever a request gives
// up, which on a shared pool would close every other delivery's, and
// net/http would resend a request on its own, uncounted, through GetBody).

// call is one Forward's state, and the context of its request. Value
// answers callKey with the call itself; everything else, Done and Deadline
// included, is the budget's context it wraps. Being the context, rather
// than a value stored in one, costs no allocation of its own.
type call struct {
	context.Context
	req        Request
	attempts   int
	lastStatus int
	span       trace.Span // the attempt on the wire; nil without a Tracer
}

type callKey struct{}

// Value implements context.Context.
func (c *call) Value(key any) any {
	if key == (callKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// callOf returns the call whose context ctx is, or one that belongs to no
// Forward (a request retryablehttp was not given by Forward never reaches
// these hooks, but a nil call must not panic them).
func callOf(ctx context.Context) *call {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		return c
	}
	return &call{Context: ctx}
}

// newClient is the retryablehttp.Client every Forward shares.
func (f *Forwarder) newClient(hc *http.Client) *retryablehttp.Client {
	c := &retryablehttp.Client{
		HTTPClient:   hc,
		RetryWaitMin: f.waitMin,
		RetryWaitMax: f.waitMax,
		RetryMax:     f.retries,
		// Passing the last response through, instead of retryablehttp's
		// default of discarding it for an error, keeps the final status and
		// body visible to Classify and to the provider.
		ErrorHandler:   retryablehttp.PassthroughErrorHandler,
		RequestLogHook: f.beforeAttempt,
		CheckRetry:     f.checkRetry,
		Backoff:        retryablehttp.DefaultBackoff,
	}
	if f.signer != nil || f.tracer != nil {
		c.PrepareRetry = f.prepareRetry
	}
	return c
}

// beforeAttempt is the RequestLogHook: retry is 0 on the first attempt.
func (f *Forwarder) beforeAttempt(_ retryablehttp.Logger, r *http.Request, retry int) {
	c := callOf(r.Context())
	c.attempts = retry + 1
	if f.tracer == nil {
		return
	}
	ctx, span := f.tracer.Start(c.Context, "forward attempt", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("webhookd.provider", c.req.Provider),
			attribute.String("webhookd.event_key", c.req.EventKey),
			attribute.Int("webhookd.attempt", c.attempts),
			attribute.String("http.request.method", http.MethodPost),
			attribute.String("server.address", f.host),
		))
	c.span = span
	// The first attempt's headers are fresh, and prepareRetry gave each
	// retry a copy of its own: this writes no map the previous attempt's
	// connection may still be reading.
	f.prop.Inject(ctx, propagation.HeaderCarrier(r.Header))
}

// prepareRetry is the PrepareRetry hook. retryablehttp shallow-copies the
// request between attempts, so the header map is still shared with the
// attempt just finished (whose connection may still be writing it out); it
// is cloned before this attempt's signature and traceparent go in. Each
// attempt is signed afresh (see sign).
func (f *Forwarder) prepareRetry(r *http.Request) error {
	r.Header = r.Header.Clone()
	f.sign(r.Header, callOf(r.Context()).req)
	return nil
}

// endAttempt ends the span of c's attempt on the wire, if any, with its
// answer or its error (redacted: net/http's errors quote the URL).
func (f *Forwarder) endAttempt(c *call, resp *http.Response, err error) {
	if c.span == nil {
		return
	}
	if resp != nil {
		c.span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			c.span.SetStatus(codes.Error, http.StatusText(resp.StatusCode))
		}
	} else if err != nil {
		c.span.SetStatus(codes.Error, f.redactErr(err).Error())
	}
	c.span.End()
	c.span = nil
}

// checkRetry is the CheckRetry hook, run after every attempt. It retries
// what retryable allows, and only while the next attempt can start before
// the budget runs out: a Retry-After that does not fit ends the retries at
// once with the answer in hand, rather than sleeping until the deadline and
// answering nothing. The wait it checks is the one retryablehttp is about
// to sleep: CheckRetry is the only hook that can stop the loop, and Backoff,
// which cannot see the deadline, is DefaultBackoff, which has no jitter, so
// the same arguments give the same wait.
func (f *Forwarder) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	c := callOf(ctx)
	f.endAttempt(c, resp, err)
	status := 0
	if resp != nil {
		status = resp.StatusCode
		c.lastStatus = status
	}
	if err != nil {
		f.debug(c, "request failed", slog.Int("attempt", c.attempts), slog.String("error", f.redactErr(err).Error()))
	}
	if Classify(status, err) != Unavailable {
		// An answer is final even if the context ended just after it came.
		return false, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return false, ctxErr
	}
	if !retryable(status, err) || permanentTransportError(err) || c.attempts > f.retries {
		return false, nil
	}
	wait := retryablehttp.DefaultBackoff(f.waitMin, f.waitMax, c.attempts-1, resp)
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
		return false, nil
	}
	f.debug(c, "retrying request", slog.Int("attempt", c.attempts), slog.Int("status", status), slog.Duration("wait", wait),
		slog.String("url", f.redacted))
	return true, nil
}

// debug logs one record about c's attempts, when Debug is enabled.
func (f *Forwarder) debug(c *call, msg string, attrs ...slog.Attr) {
	if f.log == nil || !f.log.Enabled(c, slog.LevelDebug) {
		return
	}
	attrs = append(attrs, slog.String("idempotency_key", c.req.IdempotencyKey))
	f.log.LogAttrs(c, slog.LevelDebug, msg, attrs...)
}
