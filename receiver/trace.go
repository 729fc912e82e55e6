package receiver

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// A traced delivery (Config.Tracer set) is one trace: a root span for the
// request, and a child span for each stage (verify, claim, confirm, record
// or release; the forwarder adds one per attempt and sends the core service
// its traceparent). docs/observability.md shows one.
//
// The root is always a new trace. A traceparent on the provider's request
// (a load balancer or proxy that starts traces) becomes a link, not the
// parent: the header arrives before the signature is checked, so
// continuing it would let anyone who can reach the route pick the trace id
// a delivery is filed under, and force it sampled; and a provider's
// retries of one event, each behind its own proxy trace, would then land
// in traces webhookd does not own. The link still leads from the proxy's
// trace to the delivery.
//
// No attribute holds a body, a header value, a secret or an error's text:
// errors are recorded as the delivery's outcome.

// startTrace opens d's root span and puts it in d.r's context, so that the
// stages, the store calls and the forward are its children.
func (h *handler) startTrace(d *delivery) {
	if h.Tracer == nil {
		return
	}
	ctx := d.r.Context()
	attrs := []attribute.KeyValue{attribute.String("http.route", "/webhooks/{provider}")}
	// The path segment is anyone's text until it names a provider: an
	// unknown one is left out, as a header value is.
	if d.src != nil {
		attrs = append(attrs, attribute.String("webhookd.provider", d.Provider), attribute.String("webhookd.source", d.Source))
	}
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrs...),
	}
	incoming := propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(d.r.Header))
	if remote := trace.SpanContextFromContext(incoming); remote.IsValid() {
		// The link keeps the ids that lead to the proxy's trace, not the
		// caller's tracestate, which is free text like any header value.
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: remote.WithTraceState(trace.TraceState{})}))
	}
	ctx, d.span = h.Tracer.Start(ctx, "delivery", opts...)
	d.r = d.r.WithContext(ctx)
}

// endTrace closes d's root span with what became of the delivery.
func (h *handler) endTrace(d *delivery) {
	if d.span == nil {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String("webhookd.event_key", d.eventKey()),
		attribute.String("webhookd.event_type", d.Type),
		attribute.String("webhookd.outcome", d.Outcome.String()),
		attribute.Int("http.response.status_code", d.Status),
	}
	if d.Dispatch != nil {
		attrs = append(attrs, attribute.Int("webhookd.attempts", d.Dispatch.Attempts))
	}
	if d.Items > 0 {
		attrs = append(attrs, attribute.Int("webhookd.items", d.Items))
	}
	d.span.SetAttributes(attrs...)
	if d.Status >= 500 {
		d.span.SetStatus(codes.Error, d.Outcome.String())
	}
	d.span.End()
}

// ctx is the request's context, which carries its root span when traced.
func (d *delivery) ctx() context.Context {
	if d.r == nil {
		return context.Background()
	}
	return d.r.Context()
}

// eventKey is the event key without the source's prefix, as forwarded in
// Webhook-Event-Id.
func (d *delivery) eventKey() string { return d.key.Event }

// step is the span of one stage of a traced delivery; the zero step
// (tracing off) does nothing.
type step struct{ span trace.Span }

// step starts the span of the stage name, a child of d's root.
func (h *handler) step(d *delivery, name string) step {
	if h.Tracer == nil {
		return step{}
	}
	_, span := h.Tracer.Start(d.r.Context(), name)
	if d.Key != "" {
		span.SetAttributes(attribute.String("webhookd.event_key", d.eventKey()))
	}
	return step{span}
}

// end closes the stage; a failed one is marked with the outcome its error
// maps to, never with the error's text (which may name hosts or paths).
func (s step) end(err error) {
	if s.span == nil {
		return
	}
	if err != nil {
		_, out := classify(err)
		s.span.SetStatus(codes.Error, out.String())
	}
	s.span.End()
}
