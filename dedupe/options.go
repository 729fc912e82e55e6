package dedupe

import (
	"io"
	"log/slog"
	"time"
)

// Defaults for Options fields left zero.
const (
	DefaultLease         = 60 * time.Second
	DefaultRetention     = 168 * time.Hour
	DefaultAbandonAfter  = time.Hour
	DefaultPruneInterval = time.Minute
	DefaultPruneBatch    = 1000
)

// Options are what every backend is configured with; each backend's own
// options embed them. The zero value of every field means its default.
type Options struct {
	// Lease is how long a claim is honoured before another attempt may take
	// the key over.
	Lease time.Duration
	// Retention is how long COMPLETED and FAILED records are kept.
	Retention time.Duration
	// AbandonAfter is how long an IN_FLIGHT record is kept past its lease
	// before the pruner deletes it (its key is reclaimable long before).
	AbandonAfter time.Duration
	// PruneInterval is how often the background pruner runs; negative
	// disables it.
	PruneInterval time.Duration
	// PruneBatch bounds the deletions of one pruning transaction, so that
	// pruning never holds the store long.
	PruneBatch int
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// OnPrune, if set, is called after each pruning transaction that
	// deleted records, with how many it deleted. It must not call back into
	// the store.
	OnPrune func(n int)
	// Logger receives the pruner's and the backend's rare events; nil
	// discards them.
	Logger *slog.Logger
}

// SetDefaults fills the fields left zero with their defaults.
func (o *Options) SetDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Lease, DefaultLease)
	def(&o.Retention, DefaultRetention)
	def(&o.AbandonAfter, DefaultAbandonAfter)
	def(&o.PruneInterval, DefaultPruneInterval)
	if o.PruneBatch <= 0 {
		o.PruneBatch = DefaultPruneBatch
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}
