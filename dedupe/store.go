package dedupe

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// Claimer is what the receiver's pipeline needs of a store: a claim and
// the three ways it ends (Complete, Fail, Release).
type Claimer interface {
	// Claim tries to take key for one delivery attempt, keeping req (the
	// verified request; may be nil) with the record it writes, in the same
	// transition: no extra commit or round trip. Its outcomes:
	//
	//   - (lease, nil, nil): the caller owns the key until lease.Until and
	//     must Complete, Fail or Release it.
	//   - (Lease{}, rec, nil): the key is COMPLETED or FAILED; rec holds the
	//     stored response to replay (and no request body: a replay does not
	//     answer with it, see Request.Unread).
	//   - (Lease{}, rec, ErrInFlight): another attempt holds the key until
	//     rec.LeaseUntil.
	//   - ErrFingerprintMismatch (with rec), ErrInvalidKey, ErrUnavailable,
	//     ErrClosed.
	//
	// A key that is absent, or IN_FLIGHT with a passed lease, is claimed
	// atomically: of concurrent claims exactly one wins (Decide). A
	// takeover replaces the request kept before.
	Claim(ctx context.Context, key, fingerprint string, req *Request) (Lease, *Record, error)
	// Complete records a delivered event with the downstream's response
	// (its body cut to MaxStoredBody), or fails with ErrLeaseLost when l no
	// longer owns the key.
	Complete(ctx context.Context, l Lease, resp Response) error
	// Fail records an event the downstream rejected permanently, so that
	// later deliveries replay the rejection; ErrLeaseLost as Complete.
	Fail(ctx context.Context, l Lease, resp Response) error
	// Release gives the caller's lease up without an answer: an IN_FLIGHT
	// record is deleted, so that the next delivery of the event is
	// forwarded afresh; a redriven COMPLETED or FAILED record is left
	// exactly as it was before the redrive (attempts, updated and expiry
	// times included). ErrLeaseLost as Complete.
	Release(ctx context.Context, l Lease) error
}

// Store is the contract every backend implements (dedupe/lmdb,
// dedupe/postgres, dedupe/tiered) and every backend's conformance test
// (dedupe/dedupetest) checks. Implementations are safe for concurrent use.
type Store interface {
	Claimer
	// Get returns the record of key, or ErrNotFound.
	Get(ctx context.Context, key string) (Record, error)
	// Delete removes key so that the next delivery of the event is
	// forwarded again (an operator's override). It refuses, with
	// ErrInFlight, a key whose lease is still running; the check and the
	// delete are one transition.
	Delete(ctx context.Context, key string) error
	// ForceDelete removes key whatever its state.
	ForceDelete(ctx context.Context, key string) error
	// List returns records in bytewise key order. Like Recent, it reads
	// no stored body: Response.Body is nil, and Request.Body too
	// (Request.Unread says whether it is stored); Get reads them.
	List(ctx context.Context, o ListOptions) ([]Record, error)
	// Recent returns records newest first (by CreatedAt, then by key,
	// descending) and the cursor of the next page, "" after the last. It
	// walks an index by creation time, so a page costs the records it
	// reads, not the size of the store, and it reads no stored body (see
	// List), so neither does its memory grow with the stored requests.
	Recent(ctx context.Context, o RecentOptions) ([]Record, string, error)
	// Redrive leases key for forwarding its stored request once more.
	// A FAILED or COMPLETED record keeps everything it holds (state,
	// answer, attempts, updated and expiry times) under the redrive's
	// lease until the new answer is recorded: deliveries meanwhile replay
	// that answer, and a redrive whose lease passes without an answer (the
	// process killed, the core hung) has changed nothing. An IN_FLIGHT
	// record whose lease has passed (a claim abandoned by a crash) is
	// taken over as a claim would, with one more attempt. The caller
	// finishes the lease as after Claim: Complete or Fail record the new
	// answer (with one more attempt), Release gives it up. It answers
	// ErrNotFound, ErrInFlight (with the record) while a lease runs and
	// ErrNoRequest when no whole body is stored (CheckRedrive), changing
	// nothing then.
	Redrive(ctx context.Context, key string) (Lease, Record, error)
	// Stats counts records by state.
	Stats(ctx context.Context) (map[State]int, error)
	// Ping proves the store can be read and durably written, for
	// readiness probes; it leaves nothing behind.
	Ping(ctx context.Context) error
	// Prune deletes up to limit records whose ExpiresAt has passed and
	// returns how many it deleted.
	Prune(ctx context.Context, limit int) (int, error)
	// Lease returns the lease length claims are given.
	Lease() time.Duration
	// Close releases the store; later calls fail with ErrClosed.
	Close() error
}

// ListOptions filter List.
type ListOptions struct {
	Prefix string // keep keys that start with it ("stripe:")
	State  State  // keep this state only; 0 keeps all
	After  string // start after this key (paging)
	Limit  int    // at most this many; 0 means no limit
}

// RecentOptions filter and page Recent.
type RecentOptions struct {
	// Provider keeps the keys of this source ("stripe", "stripe-eu") only:
	// the keys' prefix, which a source made from the environment shares
	// with its provider's name.
	Provider string
	// Destination keeps the records of this destination only
	// (DefaultDestination: the keys that name none; see Key).
	Destination string
	State       State  // keep this state only; 0 keeps all
	Cursor      string // continue after this page (Recent's answer); "" starts at the newest
	Limit       int    // at most this many; 0 means DefaultRecentLimit
}

// DefaultRecentLimit is the page size of Recent when none is given, and
// MaxRecentLimit the largest it serves.
const (
	DefaultRecentLimit = 50
	MaxRecentLimit     = 1000
)

// Matches reports whether rec passes o's filters.
func (o RecentOptions) Matches(rec *Record) bool {
	if o.State != 0 && rec.State != o.State {
		return false
	}
	if o.Provider != "" && !strings.HasPrefix(rec.Key, o.Provider+":") {
		return false
	}
	if o.Destination == "" {
		return true
	}
	k, err := ParseKey(rec.Key)
	return err == nil && k.DestinationName() == o.Destination
}

// DestinationSuffix is what a stored key of destination ends with, "" for
// DefaultDestination (whose keys hold no DestinationSep): for backends
// that filter in their own query language.
func DestinationSuffix(destination string) string {
	if destination == "" || destination == DefaultDestination {
		return ""
	}
	return string(DestinationSep) + destination
}

// PageLimit is the page size o asks for, within MaxRecentLimit.
func (o RecentOptions) PageLimit() int {
	switch {
	case o.Limit <= 0:
		return DefaultRecentLimit
	case o.Limit > MaxRecentLimit:
		return MaxRecentLimit
	}
	return o.Limit
}

// Cursor is a position in the newest-first order of Recent: the last
// record a page returned. Its text form is opaque to clients.
type Cursor struct {
	CreatedAt time.Time
	Key       string
}

// EncodeCursor returns the text form of the position after rec.
func EncodeCursor(rec *Record) string {
	b := binary.BigEndian.AppendUint64(nil, uint64(rec.CreatedAt.UnixNano()))
	return base64.RawURLEncoding.EncodeToString(append(b, rec.Key...))
}

// DecodeCursor parses EncodeCursor's text; "" is the zero Cursor (the
// newest record first). Anything else fails with ErrInvalidCursor.
func DecodeCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 9 {
		return Cursor{}, ErrInvalidCursor
	}
	return Cursor{CreatedAt: time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC(), Key: string(b[8:])}, nil
}

// CheckRedrive says whether rec may be redriven at now: nil for a FAILED or
// COMPLETED record, or an IN_FLIGHT one whose lease has passed (abandoned
// by a crash), holding a whole request body; ErrInFlight (checked first)
// or ErrNoRequest otherwise. A COMPLETED record is redriven too: a redrive
// is an operator's explicit action, and the core service receives the
// same Idempotency-Key, so it can tell the event again. Every backend
// decides with it.
func CheckRedrive(rec *Record, now time.Time) error {
	switch {
	case rec.Leased(now):
		return fmt.Errorf("%w: lease runs until %s", ErrInFlight, rec.LeaseUntil.Format(time.RFC3339))
	case rec.State == Queued:
		// Its delivery is under way already (Queue); a FAILED one is
		// redriven by Requeue.
		return fmt.Errorf("%w: queued for delivery", ErrInFlight)
	case rec.State != InFlight && rec.State != Failed && rec.State != Completed:
		return fmt.Errorf("%w: key %q has state %v", ErrCorrupt, rec.Key, rec.State)
	case !rec.Request.Stored():
		return ErrNoRequest
	}
	return nil
}

// Decide says what an existing record means for a new claim at now: a
// record to replay, ErrInFlight, ErrFingerprintMismatch, or (nil, nil) when
// the key may be taken over. Every backend decides with it, so that they
// answer alike.
func Decide(rec *Record, fingerprint string, now time.Time) (*Record, error) {
	if rec.Fingerprint != fingerprint {
		return rec, ErrFingerprintMismatch
	}
	switch rec.State {
	case Completed, Failed:
		return rec, nil
	case InFlight:
		if now.Before(rec.LeaseUntil) {
			return rec, ErrInFlight
		}
		return nil, nil
	case Queued:
		// A queue destination's event meeting a sync claim (the
		// destination's delivery changed by a reload): its queued
		// delivery is under way, and no second one may start beside it.
		return rec, ErrInFlight
	}
	return rec, fmt.Errorf("%w: key %q has state %v", ErrCorrupt, rec.Key, rec.State)
}

// NewToken returns a random, non-zero lease owner token.
func NewToken() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("dedupe: token: %w", err)
		}
		// Zero marks "no owner" in finished records.
		if t := binary.BigEndian.Uint64(b[:]); t != 0 {
			return t, nil
		}
	}
}
