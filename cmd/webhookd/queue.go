package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/deliver"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/routing"
)

// queueStore is a store with the queue of store and forward: every backend.
type queueStore interface {
	dedupe.Store
	dedupe.Queue
}

// busyDeliveries is how many deliveries a node has open per CPU when a
// queue destination's delivery gives way to acknowledgements
// (docs/delivery.md, "Acknowledgements first"): a node answering
// deliveries as fast as they come has a few open per CPU; eight per CPU
// are deliveries waiting for the CPU.
const busyDeliveries = 8

// queueLoops runs the delivery loop (package deliver) of the queue
// destinations in force, started afresh by every configuration put in
// force (a reload): the old loop's attempts under way finish while the new
// one starts, and the store's leases keep the two from attempting one
// event at once.
type queueLoops struct {
	store     queueStore
	rt        *router
	log       *slog.Logger
	onAttempt func(destination, outcome string)
	busy      func() bool // deliver.Options.Busy

	mu     sync.Mutex
	loop   *deliver.Loop
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start puts c's queue destinations' loop in force.
func (q *queueLoops) start(c *routing.Config) error {
	var dests []deliver.Destination
	for _, d := range c.Destinations {
		if d.Delivery != routing.Queue {
			continue
		}
		dests = append(dests, deliver.Destination{Name: d.Name, Forwarder: currentForwarder{q.rt, d.Name},
			MaxAge: d.MaxAge, Rate: d.Rate, Concurrency: d.Concurrency})
	}
	loop, err := deliver.New(deliver.Options{Store: q.store, Provider: c.ProviderOf, OnAttempt: q.onAttempt, Busy: q.busy, Logger: q.log}, dests)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	q.mu.Lock()
	if q.cancel != nil {
		q.cancel()
	}
	q.loop, q.cancel = loop, cancel
	q.mu.Unlock()
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		loop.Run(ctx)
	}()
	return nil
}

// wake tells the loop in force that destination has a new event.
func (q *queueLoops) wake(destination string) {
	q.mu.Lock()
	loop := q.loop
	q.mu.Unlock()
	if loop != nil {
		loop.Wake(destination)
	}
}

// stop ends the loops and waits for their attempts under way (each within
// its destination's timeout); an attempt cut short comes due again when
// its lease passes.
func (q *queueLoops) stop() {
	q.mu.Lock()
	if q.cancel != nil {
		q.cancel()
	}
	q.mu.Unlock()
	q.wg.Wait()
}

// currentForwarder forwards to a destination's forwarder in the
// configuration in force, so that a reload's new URL or headers reach the
// queue's next attempts.
type currentForwarder struct {
	rt   *router
	name string
}

// errDestinationGone is the answer of an attempt to a destination a reload
// removed: the event stays queued (docs/contract.md: until a destination of
// that name returns).
var errDestinationGone = errors.New("the destination is not in the configuration in force")

func (f currentForwarder) Forward(ctx context.Context, req dispatch.Request) dispatch.Result {
	fwd, ok := f.rt.Forwarder(f.name)
	if !ok {
		return dispatch.Result{Outcome: dispatch.Unavailable, Err: errDestinationGone}
	}
	return fwd.Forward(ctx, req)
}

// adminDestinations is c's destinations as the admin routes show them.
func adminDestinations(c *routing.Config) []admin.Destination {
	sources := map[string][]string{} // by destination
	for _, s := range c.Sources {
		for _, d := range c.DestinationsOf(s) {
			sources[d] = append(sources[d], s.Name)
		}
	}
	out := make([]admin.Destination, 0, len(c.Destinations))
	for _, d := range c.Destinations {
		delivery := d.Delivery
		if delivery == "" {
			delivery = routing.Sync
		}
		out = append(out, admin.Destination{Name: d.Name, URL: dispatch.RedactURL(d.URL), Delivery: string(delivery), MaxAge: d.MaxAge,
			Sources: sources[d.Name]})
	}
	return out
}

// attemptCounts tallies this node's delivery attempts by destination and
// outcome for the console's destinations page (the metrics count them
// too, for Prometheus).
type attemptCounts struct {
	mu sync.Mutex
	n  map[string]map[string]int
}

func (a *attemptCounts) observe(destination, outcome string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[string]map[string]int{}
	}
	if a.n[destination] == nil {
		a.n[destination] = map[string]int{}
	}
	a.n[destination][outcome]++
}

func (a *attemptCounts) of(destination string) map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.n[destination]))
	for o, n := range a.n[destination] {
		out[o] = n
	}
	return out
}
