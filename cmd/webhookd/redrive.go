package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/redrive"
)

// keysRedrive is `webhookd keys redrive`: it forwards the stored request of
// the named events, or of every FAILED event (of a provider, received
// within --since), to the core service again, through the same package the
// admin API uses (redrive), with the dispatch settings serve uses. It is
// safe while serve runs: each redrive is a claim in the shared store, so a
// delivery of the same event waits (409) and a concurrent redrive is
// refused. Exit status: 0 when every redrive was delivered, 1 otherwise
// (one line per event says why), 2 for a usage or configuration error.
func keysRedrive(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("webhookd keys redrive", keysUsage, stderr)
	state := fs.String("state", "", "redrive every event in this state: failed")
	provider := fs.String("provider", "", "with --state: only this provider's events")
	since := fs.Duration("since", 0, "with --state: only events received within this long (24h); 0 means any")
	dest := fs.String("destination", "", "with KEYs: the records of this destination, when an event went to several; with --state: only this destination's events")
	typ := fs.String("type", "", "with --state: only events whose type matches this glob (invoice.*)")
	keys, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "webhookd keys redrive: "+format+"\n", a...)
		return 2
	}
	switch {
	case *state == "" && len(keys) == 0:
		fs.Usage()
		return 2
	case *state != "" && len(keys) > 0:
		return bad("give KEYs or --state, not both")
	case *state != "" && !strings.EqualFold(*state, "failed"):
		return bad("--state takes failed: only FAILED events are redriven")
	case *state == "" && (*provider != "" || *since != 0 || *typ != ""):
		return bad("--provider, --type and --since select events with --state failed")
	case strings.Contains(*provider, ":"):
		return bad("--provider takes a provider name (stripe), not a key")
	case *since < 0:
		return bad("--since must not be negative")
	}
	if _, err := path.Match(*typ, ""); err != nil {
		return bad("--type: %v", err)
	}
	for _, k := range keys {
		if err := checkKeyArg(k); err != nil {
			return bad("%v", err)
		}
	}
	cfg, err := loadConfig()
	if err == nil && cfg.Config == "" {
		err = cfg.checkDownstream()
	}
	if err != nil {
		fmt.Fprintf(stderr, "webhookd: configuration: %v\n", err)
		return 2
	}
	cfg.warnUnknown(stderr)
	tr, _, stopTracing, err := startTracing(ctx, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintf(stderr, "webhookd: configuration: %v\n", err)
		return 2
	}
	defer stopTracing()
	// The destinations serve forwards to: the file's, or the variables'.
	rt, err := newRouter(cfg, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), tr)
	if err != nil {
		fmt.Fprintf(stderr, "webhookd: configuration: %v\n", err)
		return 2
	}
	defer rt.closeIdle()
	s, code := openKeysStoreWith(ctx, cfg, stderr)
	if s == nil {
		return code
	}
	defer s.Close()
	if *state != "" {
		if keys, err = failedKeys(ctx, s, failedFilter{*provider, *dest, *typ, *since}); err != nil {
			fmt.Fprintf(stderr, "webhookd keys redrive: %v\n", err)
			return 1
		}
		if len(keys) == 0 {
			fmt.Fprintf(stderr, "webhookd keys redrive: no FAILED events%s\n", filterNote(*provider, ""))
			return 0
		}
	}
	rd := &redrive.Redriver{Store: s, Tracer: tr.Tracer, ProviderOf: rt.ProviderOf,
		ForwarderOf: func(d string) (redrive.Forwarder, bool) { return rt.Forwarder(d) }}
	code = 0
	for _, key := range keys {
		if ctx.Err() != nil {
			fmt.Fprintf(stdout, "%s\tnot redriven: interrupted\n", printable(key))
			code = 1
			continue
		}
		resolveDest := *dest
		if *state != "" {
			resolveDest = "" // the listing's stored keys
		}
		stored, err := dedupe.ResolveKey(ctx, s, key, resolveDest)
		if err != nil {
			stored = key
		}
		var line string
		var ok bool
		if maxAge, queued := queuedRecord(ctx, s, rt, stored); err == nil && queued {
			line, ok = requeueLine(s.(queueStore).Requeue(ctx, stored, maxAge))
		} else {
			var res redrive.Result
			if err == nil {
				res, err = rd.Redrive(ctx, stored)
			}
			line, ok = redriveLine(res, err)
		}
		fmt.Fprintf(stdout, "%s\t%s\n", displayKey(stored), line)
		if !ok {
			code = 1
		}
	}
	return code
}

// redriveLine says what became of one redrive, and whether it was
// delivered.
func redriveLine(res redrive.Result, err error) (string, bool) {
	switch {
	case err == nil && res.Delivered():
		return fmt.Sprintf("delivered: %d", res.Dispatch.Status), true
	case err == nil:
		return fmt.Sprintf("rejected: %d (recorded as FAILED)", res.Dispatch.Status), false
	case errors.Is(err, redrive.ErrNotDelivered):
		why := "unreachable"
		if res.Dispatch.Status != 0 {
			why = fmt.Sprintf("answered %d", res.Dispatch.Status)
		}
		return "not delivered: the core service " + why + "; the record is unchanged", false
	case errors.Is(err, dedupe.ErrInFlight):
		return "not redriven: IN_FLIGHT, a delivery is being forwarded; try again when its lease has passed", false
	case errors.Is(err, dedupe.ErrNoRequest):
		return "not redriven: no request body stored (WEBHOOKD_STORE_REQUESTS was off, or the body was too large)", false
	case errors.Is(err, dedupe.ErrNotFound):
		return "not redriven: no record", false
	}
	return "not redriven: " + err.Error(), false
}

// failedFilter selects the FAILED events of keys redrive --state failed.
type failedFilter struct {
	provider, destination, typ string
	since                      time.Duration
}

// queuedRecord reports whether stored is a queue destination's record (it
// is requeued, not forwarded), with its destination's max_age in the
// configuration in force.
func queuedRecord(ctx context.Context, s dedupe.Store, rt *router, stored string) (time.Duration, bool) {
	if _, ok := s.(queueStore); !ok {
		return 0, false
	}
	rec, err := s.Get(ctx, stored)
	if err != nil || rec.Destination == "" {
		return 0, false
	}
	if d, ok := rt.Routes().Config.Destination(rec.Destination); ok {
		return d.MaxAge, true
	}
	return 0, true
}

// requeueLine says what became of one requeue; a requeued event is
// delivered by serve's loop.
func requeueLine(_ dedupe.Record, err error) (string, bool) {
	switch {
	case err == nil:
		return "requeued: serve's delivery loop attempts it", true
	case errors.Is(err, dedupe.ErrInFlight):
		return "not requeued: an attempt holds it", false
	case errors.Is(err, dedupe.ErrNotQueueable):
		return "not requeued: not FAILED", false
	}
	return "not requeued: " + err.Error(), false
}

// failedKeys lists the FAILED events to redrive, oldest first, so that the
// core service receives them in the order they first arrived. The listing
// is newest first, so it stops at the first event older than since.
func failedKeys(ctx context.Context, s dedupe.Store, f failedFilter) ([]string, error) {
	var cutoff time.Time
	if f.since > 0 {
		cutoff = time.Now().Add(-f.since)
	}
	var keys []string
	o := dedupe.RecentOptions{Provider: f.provider, Destination: f.destination, State: dedupe.Failed, Limit: dedupe.MaxRecentLimit}
	for {
		recs, next, err := s.Recent(ctx, o)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if !cutoff.IsZero() && r.CreatedAt.Before(cutoff) {
				slices.Reverse(keys)
				return keys, nil
			}
			if f.typ != "" {
				typ := ""
				if r.Request != nil {
					typ = r.Request.EventType
				}
				if ok, _ := path.Match(f.typ, typ); !ok {
					continue
				}
			}
			keys = append(keys, r.Key)
		}
		if next == "" {
			slices.Reverse(keys)
			return keys, nil
		}
		o.Cursor = next
	}
}
