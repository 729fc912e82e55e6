package dedupe

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"time"
)

// Claimer is what the receiver's pipeline needs of a store: the four
// transitions of one delivery.
type Claimer interface {
	// Claim tries to take key for one delivery attempt. Its outcomes:
	//
	//   - (lease, nil, nil): the caller owns the key until lease.Until and
	//     must Complete, Fail or Release it.
	//   - (Lease{}, rec, nil): the key is COMPLETED or FAILED; rec holds the
	//     stored response to replay.
	//   - (Lease{}, rec, ErrInFlight): another attempt holds the key until
	//     rec.LeaseUntil.
	//   - ErrFingerprintMismatch (with rec), ErrInvalidKey, ErrUnavailable,
	//     ErrClosed.
	//
	// A key that is absent, or IN_FLIGHT with a passed lease, is claimed
	// atomically: of concurrent claims exactly one wins (Decide).
	Claim(ctx context.Context, key, fingerprint string) (Lease, *Record, error)
	// Complete records a delivered event with the downstream's response
	// (its body cut to MaxStoredBody), or fails with ErrLeaseLost when l no
	// longer owns the key.
	Complete(ctx context.Context, l Lease, resp Response) error
	// Fail records an event the downstream rejected permanently, so that
	// later deliveries replay the rejection; ErrLeaseLost as Complete.
	Fail(ctx context.Context, l Lease, resp Response) error
	// Release deletes the caller's IN_FLIGHT record so that the next
	// delivery of the event is forwarded afresh; ErrLeaseLost as Complete.
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
	// List returns records in bytewise key order.
	List(ctx context.Context, o ListOptions) ([]Record, error)
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

// MaxKeyLen is the longest store key any backend accepts: the LMDB
// backend's limit (LMDB's 511-byte keys less its expiry index's 8-byte time
// prefix), kept by every backend so that a key valid on one is valid on all.
const MaxKeyLen = 511 - 8

// CheckKey refuses, with ErrInvalidKey, a key no backend can store.
func CheckKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidKey, len(key), MaxKeyLen)
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
