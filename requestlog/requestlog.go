// Package requestlog keeps the request log (docs/contract.md, "Refusals and
// the request log"): an entry for every request to /webhooks/*, whatever it
// became, written to the store in batches off the request's path.
//
// The receiver hands each finished delivery to Log.Observe (its
// Config.OnDelivery, beside the metrics), which only puts an entry on a
// buffered channel and never waits: when the buffer is full the entry is
// dropped and counted (Options.OnDrop), so a flood of requests slows
// nobody down. One flusher goroutine takes what has arrived and appends it
// to the store in one write every Options.Interval (or sooner once
// Options.MaxBatch entries wait), and the store trims the log to its bounds
// in that same write. A crash loses what had not been written yet: at most
// the last Interval of entries.
//
// It never holds a request's body, only its size: the body of a request
// whose signature did not verify must never be kept, and the log is for
// what happened to requests, not what they said.
package requestlog

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/receiver"
)

// Appender is the store's part of the request log the Log writes to.
type Appender interface {
	AppendRequests(ctx context.Context, entries []dedupe.LoggedRequest, b dedupe.RequestLogBounds) error
}

// Defaults of Options.
const (
	DefaultBuffer   = 8192
	DefaultInterval = time.Second
	DefaultMaxBatch = 1024
	// DefaultSize and DefaultAge are WEBHOOKD_REQUEST_LOG_SIZE's and
	// WEBHOOKD_REQUEST_LOG_AGE's defaults.
	DefaultSize = 10000
	DefaultAge  = 24 * time.Hour
)

// Options configure a Log. Zero values take the defaults above.
type Options struct {
	// Bounds is what the store keeps (WEBHOOKD_REQUEST_LOG_SIZE and _AGE).
	Bounds dedupe.RequestLogBounds
	// Buffer is how many entries may wait for the flusher; past it new
	// entries are dropped.
	Buffer int
	// Interval is how long an entry may wait before it is written.
	Interval time.Duration
	// MaxBatch is how many entries one write takes at most.
	MaxBatch int
	// Timeout bounds one write; Interval×5 if zero.
	Timeout time.Duration
	// OnDrop, if set, is called with how many entries were lost: dropped
	// because the buffer was full, or in a write that failed.
	OnDrop func(n int)
	// Logger reports failed writes.
	Logger *slog.Logger
}

// Log is the request log's writer. Its methods are safe for concurrent use.
type Log struct {
	store Appender
	opts  Options
	ch    chan dedupe.LoggedRequest
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// New starts a Log writing to store. Close stops it.
func New(store Appender, opts Options) *Log {
	if opts.Bounds.Size <= 0 {
		opts.Bounds.Size = DefaultSize
	}
	if opts.Bounds.Age <= 0 {
		opts.Bounds.Age = DefaultAge
	}
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * opts.Interval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Log{store: store, opts: opts, ch: make(chan dedupe.LoggedRequest, opts.Buffer),
		quit: make(chan struct{}), done: make(chan struct{})}
	go l.flushLoop()
	return l
}

// Observe logs one finished delivery. It is the receiver's
// Config.OnDelivery (with the metrics' and the overview's). A nil Log (a
// store without a request log) logs nothing.
func (l *Log) Observe(d receiver.Delivery) {
	if l != nil {
		l.Add(Entry(d))
	}
}

// Add puts e on the buffer, or drops it when the buffer is full. It never
// blocks.
func (l *Log) Add(e dedupe.LoggedRequest) {
	select {
	case l.ch <- e:
	default:
		l.dropped(1)
	}
}

func (l *Log) dropped(n int) {
	if l.opts.OnDrop != nil {
		l.opts.OnDrop(n)
	}
}

// Close writes what waits and stops the flusher. Entries added after Close
// are dropped once the buffer fills.
func (l *Log) Close() {
	l.once.Do(func() { close(l.quit) })
	<-l.done
}

func (l *Log) flushLoop() {
	defer close(l.done)
	tick := time.NewTicker(l.opts.Interval)
	defer tick.Stop()
	batch := make([]dedupe.LoggedRequest, 0, l.opts.MaxBatch)
	for {
		select {
		case e := <-l.ch:
			if batch = append(batch, e); len(batch) >= l.opts.MaxBatch {
				batch = l.flush(batch)
			}
		case <-tick.C:
			batch = l.flush(batch)
		case <-l.quit:
			for {
				select {
				case e := <-l.ch:
					if batch = append(batch, e); len(batch) >= l.opts.MaxBatch {
						batch = l.flush(batch)
					}
				default:
					l.flush(batch)
					return
				}
			}
		}
	}
}

// flush writes batch in one append and returns it emptied.
func (l *Log) flush(batch []dedupe.LoggedRequest) []dedupe.LoggedRequest {
	if len(batch) == 0 {
		return batch
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.Timeout)
	defer cancel()
	if err := l.store.AppendRequests(ctx, batch, l.opts.Bounds); err != nil {
		// Not retried: the log is a window on recent traffic, and a store
		// that cannot take it has deliveries to serve first.
		l.opts.Logger.Warn("request log: entries lost", "entries", len(batch), "error", err.Error())
		l.dropped(len(batch))
	}
	clear(batch)
	return batch[:0]
}

// Entry makes the request log's entry of a delivery: the store key's
// event part and the type only when the signature verified (the receiver
// derives a key only then), never any part of a body. For a route that
// names no source, Source is the name requested, cut to
// dedupe.MaxRequestSourceLen bytes, and Provider is empty.
func Entry(d receiver.Delivery) dedupe.LoggedRequest {
	e := dedupe.LoggedRequest{
		Time: d.Received, Source: d.Provider, Provider: d.Provider, Outcome: d.Outcome.String(),
		Reason: d.Reason, Status: d.Status, Size: d.Size, RemoteAddr: d.RemoteAddr, Type: d.Type,
	}
	if d.Outcome == receiver.OutcomeNotFound {
		e.Provider = ""
		e.Source = cut(d.Provider, dedupe.MaxRequestSourceLen)
	}
	if d.Key != "" {
		e.EventKey = strings.TrimPrefix(d.Key, d.Provider+":")
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	return e
}

// cut returns s's first n bytes at most, without splitting a UTF-8
// sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
