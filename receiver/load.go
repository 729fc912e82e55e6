package receiver

import (
	"sync/atomic"
	"time"
)

// Load counts the deliveries the receiver has open: past the read of
// their body, not yet answered. Work that may wait reads it, so that it
// gives way while the gateways' side of the node is saturated: a queue
// destination's delivery loop keeps one attempt open at most while Busy
// (deliver.Options.Busy; docs/delivery.md, "Acknowledgements first").
// A nil *Load counts nothing and is never busy.
type Load struct {
	open   atomic.Int64
	busyAt int64
	now    func() time.Time
	base   time.Time
	// until is when the last moment with busyAt open, plus LoadHold,
	// ends, in nanoseconds since base: the count of a saturated node
	// swings below busyAt between arrivals, and work that started in such
	// a gap would take the CPU the next arrivals wait for.
	until atomic.Int64
}

// LoadHold is how long a Load stays busy after its deliveries open last
// reached its threshold.
const LoadHold = 100 * time.Millisecond

// NewLoad returns a Load that is busy with busyAt deliveries open or
// more (at least 1), and for LoadHold after, by the clock now (time.Now
// if nil).
func NewLoad(busyAt int, now func() time.Time) *Load {
	if now == nil {
		now = time.Now
	}
	return &Load{busyAt: int64(max(busyAt, 1)), now: now, base: now()}
}

// Busy reports whether busyAt deliveries or more are open, or were within
// LoadHold.
func (l *Load) Busy() bool {
	if l == nil {
		return false
	}
	return l.open.Load() >= l.busyAt || int64(l.now().Sub(l.base)) < l.until.Load()
}

// Open returns how many deliveries are open.
func (l *Load) Open() int {
	if l == nil {
		return 0
	}
	return int(l.open.Load())
}

// enter counts a delivery open until its leave.
func (l *Load) enter() {
	if l != nil && l.open.Add(1) >= l.busyAt {
		l.until.Store(int64(l.now().Sub(l.base) + LoadHold))
	}
}

// leave ends what enter began.
func (l *Load) leave() {
	if l != nil {
		l.open.Add(-1)
	}
}
