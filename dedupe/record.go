package dedupe

import (
	"fmt"
	"time"
)

// State is where a key is in its life.
type State uint8

// The states of a record. The zero State matches any state in filters.
const (
	InFlight  State = 1
	Completed State = 2
	Failed    State = 3
)

// String returns the state's name as operators see it.
func (s State) String() string {
	switch s {
	case InFlight:
		return "IN_FLIGHT"
	case Completed:
		return "COMPLETED"
	case Failed:
		return "FAILED"
	case Queued:
		return "QUEUED"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// ParseState parses a state name as printed by String (case-sensitive).
func ParseState(s string) (State, error) {
	for _, st := range []State{InFlight, Completed, Failed, Queued} {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("dedupe: unknown state %q (want IN_FLIGHT, COMPLETED, FAILED or QUEUED)", s)
}

// MaxStoredBody caps the downstream answer body kept with a COMPLETED or
// FAILED record; a longer body is cut, and replays return the cut body. The
// dispatcher reads no more than this (dispatch.MaxResponseBytes is defined
// as it), so first answer and replays agree.
const MaxStoredBody = 64 << 10

// Response is the downstream answer recorded with a finished event.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

// Record is the stored state of one key.
type Record struct {
	Key   string
	State State
	// Token owns the current lease: an IN_FLIGHT record's claim, or a
	// redrive of a COMPLETED or FAILED record, which keeps its state and
	// answer while the redrive runs (Store.Redrive). Zero: no lease.
	Token      uint64
	LeaseUntil time.Time // when Token's lease passes; zero without one
	// Attempts counts the forwards: claims (takeovers included) and the
	// redrives whose answer was recorded.
	Attempts    uint32
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ExpiresAt   time.Time // when the pruner may delete the record
	Fingerprint string
	Response    Response // COMPLETED and FAILED only
	// Request is the verified request as forwarded, kept with the claim
	// that first took the key (and replaced by a takeover's); nil when the
	// claim kept none (a record written before requests were kept, or by
	// a claim without one).
	Request *Request

	// Destination is the queue destination of a queued event (Enqueue);
	// "" for a record of a sync forward. The fields below are a queued
	// event's only.
	Destination string
	// QueuedAt is the event's arrival, or its last redrive (Requeue): no
	// attempt starts later than the destination's max_age after it.
	QueuedAt time.Time
	// NextAttempt is when a QUEUED event is due: its next attempt, or the
	// end of the lease of the attempt under way.
	NextAttempt time.Time
	// Retries counts the attempts since QueuedAt that ended unavailable
	// (Retry): the backoff of the next one.
	Retries uint32
	// Reason says why a queued event is FAILED (FailAttempt).
	Reason string
}

// Leased reports whether a lease (a claim's or a redrive's) holds r at now.
func (r *Record) Leased(now time.Time) bool {
	return r.Token != 0 && now.Before(r.LeaseUntil)
}

// Lease is what a successful Claim hands to its caller: the right to finish
// the key until Until.
type Lease struct {
	Key   string
	Token uint64
	Until time.Time
}

// MaxStoredRequest caps the request body kept with a record (for redrive
// and the console): WEBHOOKD_MAX_BODY_BYTES's default, so that with the
// default settings every verified request is kept whole. A longer body
// (possible only when WEBHOOKD_MAX_BODY_BYTES is raised) is not kept at all,
// since a cut body could not be forwarded again: its Request keeps the
// headers and the size, and a redrive of it is refused (ErrNoRequest).
const MaxStoredRequest = 1 << 20

// Request is the verified request kept with a record, written with its
// claim: what webhookd forwarded, so that it can be forwarded again
// (redrive) exactly as the first time. The other forwarded headers
// (Idempotency-Key, Webhook-Provider, Webhook-Event-Id) follow from the
// record's key, and the signature (WEBHOOKD_DOWNSTREAM_SECRET) is made
// afresh by each forward, as it is for every retry.
type Request struct {
	// ContentType is the provider's Content-Type, forwarded as is.
	ContentType string
	// EventType is forwarded as Webhook-Event-Type.
	EventType string
	// Body is the raw body, byte for byte; nil when it was not kept.
	Body []byte
	// Size is the body's length as received. It differs from len(Body)
	// when the body was not kept: WEBHOOKD_STORE_REQUESTS=false, or a body
	// over MaxStoredRequest.
	Size int
	// Unread means the whole body is stored but this read left it out
	// (Body is nil): listings (List, Recent) and a claim's replay answer
	// with no request body, so they read none, whatever its size. Get and
	// Redrive read it.
	Unread bool
}

// NewRequest returns the Request to keep for a verified delivery: with its
// body when keepBody is set and the body fits in MaxStoredRequest, else
// only its headers and size. It does not copy body; backends copy as they
// write.
func NewRequest(contentType, eventType string, body []byte, keepBody bool) *Request {
	r := &Request{ContentType: contentType, EventType: eventType, Size: len(body)}
	if keepBody && len(body) <= MaxStoredRequest {
		r.Body = body
	}
	return r
}

// Stored reports whether the whole body is stored with the record, so that
// it can be forwarded again (Get reads it into Body).
func (r *Request) Stored() bool {
	return r != nil && (r.Unread || len(r.Body) == r.Size)
}
