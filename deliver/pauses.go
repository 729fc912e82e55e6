package deliver

import (
	"context"
	"sync"
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

// PauseReader reads the pause flags (dedupe.Queue.Paused).
type PauseReader interface {
	Paused(ctx context.Context) (map[string]dedupe.Pause, error)
}

// Pauses answers whether a destination is paused from the store's flags,
// read at most once every interval (DefaultPoll when zero): what the
// receiver asks on every sync delivery, at the cost of one read a
// second, and what bounds how late a pause set on another node is seen.
type Pauses struct {
	store    PauseReader
	interval time.Duration
	now      func() time.Time
	timeout  time.Duration

	mu    sync.Mutex
	flags map[string]dedupe.Pause
	read  time.Time
}

// NewPauses returns the flags of store, read afresh once interval has
// passed; now is the clock (time.Now if nil).
func NewPauses(store PauseReader, interval time.Duration, now func() time.Time) *Pauses {
	if interval <= 0 {
		interval = DefaultPoll
	}
	if now == nil {
		now = time.Now
	}
	return &Pauses{store: store, interval: interval, now: now, timeout: interval}
}

// Paused reports whether destination is paused. A store that cannot be
// read leaves the last flags read in force: a sync delivery's own claim
// meets the store's trouble anyway.
func (p *Pauses) Paused(destination string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := p.now(); p.flags == nil || now.Sub(p.read) >= p.interval || now.Before(p.read) {
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		flags, err := p.store.Paused(ctx)
		cancel()
		p.read = now
		if err == nil {
			p.flags = flags
		} else if p.flags == nil {
			p.flags = map[string]dedupe.Pause{}
		}
	}
	return p.flags[destination].Paused
}
