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
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// ParseState parses a state name as printed by String (case-sensitive).
func ParseState(s string) (State, error) {
	for _, st := range []State{InFlight, Completed, Failed} {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("dedupe: unknown state %q (want IN_FLIGHT, COMPLETED or FAILED)", s)
}

// MaxStoredBody caps the downstream answer body kept with a COMPLETED or
// FAILED record; a longer body is cut, and replays return the cut body. The
// dispatcher reads no more than this, so first answer and replays agree.
const MaxStoredBody = 64 << 10

// Response is the downstream answer recorded with a finished event.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

// Record is the stored state of one key.
type Record struct {
	Key         string
	State       State
	Token       uint64    // owner of the current lease (IN_FLIGHT only)
	LeaseUntil  time.Time // IN_FLIGHT only
	Attempts    uint32    // claims so far, takeovers included
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ExpiresAt   time.Time // when the pruner may delete the record
	Fingerprint string
	Response    Response // COMPLETED and FAILED only
}

// Lease is what a successful Claim hands to its caller: the right to finish
// the key until Until.
type Lease struct {
	Key   string
	Token uint64
	Until time.Time
}
