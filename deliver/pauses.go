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
// read again once interval (DefaultPoll when zero) has passed: what the
// receiver asks on every sync delivery, at the cost of one read a second,
// and what bounds how late a pause set on another node is seen. Only the
// first answer waits for the store; later ones answer from the flags in
// hand while one read in the background brings them up to date, so that a
// slow store never holds a delivery here.
type Pauses struct {
	store    PauseReader
	interval time.Duration
	now      func() time.Time

	mu         sync.Mutex
	flags      map[string]dedupe.Pause
	read       time.Time
	refreshing bool
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
	return &Pauses{store: store, interval: interval, now: now}
}

// Paused reports whether destination is paused. A store that cannot be
// read leaves the last flags read in force (none: not paused): a sync
// delivery's own claim meets the store's trouble anyway.
func (p *Pauses) Paused(destination string) bool {
	p.mu.Lock()
	first := p.flags == nil
	if now := p.now(); !first && !p.refreshing && (now.Sub(p.read) >= p.interval || now.Before(p.read)) {
		p.refreshing = true
		go p.Refresh()
	}
	p.mu.Unlock()
	if first {
		p.Refresh()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flags[destination].Paused
}

// Refresh reads the flags from the store now.
func (p *Pauses) Refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), p.interval)
	flags, err := p.store.Paused(ctx)
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.read, p.refreshing = p.now(), false
	if err == nil {
		p.flags = flags
	} else if p.flags == nil {
		p.flags = map[string]dedupe.Pause{}
	}
}
