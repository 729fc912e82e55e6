// Package redrive forwards a stored request to the core service again: the
// one implementation behind the admin API's POST
// /api/records/{key}/redrive and `webhookd keys redrive`.
//
// A redrive is a lease on the record (dedupe.Store.Redrive: never while a
// lease runs, never without the whole body; a COMPLETED event is redriven
// too, on the operator's word, and the core service dedupes it by its
// Idempotency-Key), then a forward with the same Idempotency-Key, body and
// headers as the first time (the signature, when WEBHOOKD_DOWNSTREAM_SECRET
// is set, is made afresh, as for every retry), then the new answer is
// recorded with one more attempt. It must never leave a record worse off
// than it found it: the lease changes nothing in a finished record, so when
// the core service cannot be reached, or the process dies mid-forward, the
// record is exactly as it was and the provider's retries are replayed its
// answer.
package redrive

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dispatch"
)

// Forwarder sends a request to the core service (dispatch.Forwarder).
type Forwarder interface {
	Forward(ctx context.Context, req dispatch.Request) dispatch.Result
}

// ErrNotDelivered means the core service could not be reached (or answered
// 5xx or 429 after the retries): nothing was recorded, and the record keeps
// the answer it had.
var ErrNotDelivered = errors.New("redrive: the core service did not answer; the record is unchanged")

// ErrNoDestination means the record's destination is not in the
// configuration in force (a reload removed it): nothing was forwarded.
var ErrNoDestination = errors.New("redrive: the record's destination is not configured")

// Redriver redrives records of Store through Forwarder.
type Redriver struct {
	Store     dedupe.Store
	Forwarder Forwarder
	// Tracer, if set, makes each redrive a trace of its own (a root span
	// "redrive", the forwarder's attempts under it), so that the core
	// service's spans of the redriven event join it through the
	// traceparent every attempt carries. Nil traces nothing.
	Tracer trace.Tracer
	// ProviderOf names the provider of a source, sent as Webhook-Provider;
	// nil, or "" for a source, names the source itself (every source made
	// from the environment is named after its provider).
	ProviderOf func(source string) string
	// ForwarderOf, if set, returns the forwarder of a record's destination
	// (its key's): a destination it does not know is ErrNoDestination,
	// never another's forwarder. Nil sends every record to Forwarder.
	ForwarderOf func(destination string) (Forwarder, bool)
}

// Result is what became of one redrive.
type Result struct {
	// Record is the record after the redrive: COMPLETED with the core
	// service's answer, FAILED with its new rejection, or as it was.
	Record dedupe.Record
	// Dispatch is the forward's result.
	Dispatch dispatch.Result
}

// Delivered reports whether the core service accepted the redriven event.
func (r Result) Delivered() bool { return r.Dispatch.Outcome == dispatch.Delivered }

// Redrive forwards key's stored request again and records the answer. Its
// errors are the store's (dedupe.ErrNotFound, ErrInFlight,
// ErrNoRequest, ErrUnavailable, ...), before anything was forwarded, or
// ErrNotDelivered after a forward the core service did not answer. A
// rejection (a permanent 4xx) is no error: it is recorded as FAILED, as
// WEBHOOKD_FAILED_POLICY=replay would, whatever the policy, so that the
// stored request stays for the next redrive. The forward runs on ctx; the
// store writes that settle the claim outlive it, so a cancelled redrive
// never leaves its claim behind.
func (rd *Redriver) Redrive(ctx context.Context, key string) (out Result, err error) {
	if rd.Tracer != nil {
		var span trace.Span
		ctx, span = rd.Tracer.Start(ctx, "redrive", trace.WithNewRoot(), trace.WithAttributes(
			attribute.String("webhookd.key", key)))
		defer func() { endSpan(span, out, err) }()
	}
	k, err := dedupe.ParseKey(key)
	if err != nil {
		return Result{}, err
	}
	fwd := rd.Forwarder
	if rd.ForwarderOf != nil {
		f, ok := rd.ForwarderOf(k.DestinationName())
		if !ok {
			return Result{}, fmt.Errorf("%w: %q", ErrNoDestination, k.DestinationName())
		}
		fwd = f
	}
	lease, rec, err := rd.Store.Redrive(ctx, key)
	if err != nil {
		return Result{Record: rec}, err
	}
	var provider string
	if rd.ProviderOf != nil {
		provider = rd.ProviderOf(k.Source)
	}
	storeCtx := context.WithoutCancel(ctx)
	res := fwd.Forward(ctx, dispatch.NewRequest(k, provider, rec.Request.EventType, rec.Request.ContentType, rec.Request.Body))
	out = Result{Dispatch: res}
	resp := dedupe.Response{Status: res.Status, ContentType: res.ContentType, Body: res.Body}
	switch res.Outcome {
	case dispatch.Delivered:
		err = rd.Store.Complete(storeCtx, lease, resp)
	case dispatch.Rejected:
		err = rd.Store.Fail(storeCtx, lease, resp)
	default:
		// A COMPLETED or FAILED record is left as it was; a claim that was
		// abandoned mid-forward is deleted, as the receiver releases one
		// the core did not answer, so the provider's next retry is
		// forwarded afresh.
		err = rd.Store.Release(storeCtx, lease)
		if err == nil {
			err = ErrNotDelivered
		} else {
			err = errors.Join(ErrNotDelivered, err)
		}
	}
	if cur, gerr := rd.Store.Get(storeCtx, key); gerr == nil {
		out.Record = cur
	} else {
		out.Record = rec
	}
	return out, err
}

// endSpan closes a redrive's span with its result: the forward's attempts
// and status, and the record's state after it. An error is named by its
// sentinel's text, never by the store's detail.
func endSpan(span trace.Span, out Result, err error) {
	span.SetAttributes(
		attribute.Int("webhookd.attempts", out.Dispatch.Attempts),
		attribute.Int("http.response.status_code", out.Dispatch.Status),
		attribute.String("webhookd.state", out.Record.State.String()),
	)
	if err != nil {
		msg := "redrive failed"
		for _, target := range []error{ErrNotDelivered, dedupe.ErrNotFound, dedupe.ErrInFlight, dedupe.ErrNoRequest, dedupe.ErrUnavailable} {
			if errors.Is(err, target) {
				msg = target.Error()
				break
			}
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}
