package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/routing"
)

const destinationsUsage = `webhookd destinations list
       webhookd destinations pause NAME
       webhookd destinations resume NAME

Lists the destinations of the configuration serve runs (WEBHOOKD_CONFIG, or
the environment's one destination "default") with their delivery, pause flag,
queued events and oldest queued event, or pauses and resumes one. The flag is
in the store (WEBHOOKD_STORE), so serve, on this node or any node sharing the
store, sees it within 2 seconds; it may be running. A paused queue
destination keeps queueing but attempts nothing; a paused sync one answers 503.
A queue whose destination a reload removed is listed while events wait in
it, as "queue (removed)": they stay until a destination of that name
returns.
(docs/delivery.md)`

// runDestinations is `webhookd destinations`. Exit status: 0 on success, 1
// for a store error, 2 for a usage or configuration error (an unknown
// destination included).
func runDestinations(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("webhookd destinations", destinationsUsage, stderr)
	rest, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	switch {
	case len(rest) == 1 && rest[0] == "list":
	case len(rest) == 2 && (rest[0] == "pause" || rest[0] == "resume"):
	default:
		fs.Usage()
		return 2
	}
	cfg, err := loadConfig()
	if err != nil {
		fmt.Fprintf(stderr, "webhookd: configuration: %v\n", err)
		return 2
	}
	c, err := loadRouting(cfg, nil, cfg.Config, os.Environ())
	if err != nil {
		fmt.Fprintf(stderr, "webhookd destinations: %v\n", err)
		return 2
	}
	s, code := openKeysStoreWith(ctx, cfg, stderr)
	if s == nil {
		return code
	}
	defer s.Close()
	q, ok := s.(queueStore)
	if !ok {
		fmt.Fprintf(stderr, "webhookd destinations: the %s store has no queue\n", cfg.Store)
		return 1
	}
	if rest[0] == "list" {
		return listDestinations(ctx, q, c, stdout, stderr)
	}
	name := rest[1]
	if _, ok := c.Destination(name); !ok {
		fmt.Fprintf(stderr, "webhookd destinations: no destination %q in the configuration\n", name)
		return 2
	}
	if err := q.SetPaused(ctx, name, rest[0] == "pause"); err != nil {
		fmt.Fprintf(stderr, "webhookd destinations: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s %sd\n", name, rest[0])
	return 0
}

func listDestinations(ctx context.Context, q queueStore, c *routing.Config, stdout, stderr io.Writer) int {
	paused, err := q.Paused(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "webhookd destinations: %v\n", err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDELIVERY\tPAUSED\tQUEUED\tOLDEST QUEUED")
	configured := map[string]bool{}
	for _, d := range adminDestinations(c) {
		configured[d.Name] = true
		pause := "no"
		if p := paused[d.Name]; p.Paused {
			pause = "since " + p.Since.UTC().Format(time.RFC3339)
		}
		queued, oldest := "-", "-"
		if d.Delivery == string(routing.Queue) {
			st, err := q.QueueStats(ctx, d.Name)
			if err != nil {
				fmt.Fprintf(stderr, "webhookd destinations: %s: %v\n", d.Name, err)
				return 1
			}
			queued, oldest = fmt.Sprint(st.Depth), oldestText(st)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Name, d.Delivery, pause, queued, oldest)
	}
	// The queues of destinations a reload removed: their events wait, in
	// the store, for a destination of that name to return.
	names, err := q.QueueDestinations(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "webhookd destinations: %v\n", err)
		return 1
	}
	for _, name := range names {
		if configured[name] {
			continue
		}
		st, err := q.QueueStats(ctx, name)
		if err != nil {
			fmt.Fprintf(stderr, "webhookd destinations: %s: %v\n", name, err)
			return 1
		}
		pause := "no"
		if p := paused[name]; p.Paused {
			pause = "since " + p.Since.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", name, "queue (removed)", pause, st.Depth, oldestText(st))
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	return 0
}

func oldestText(st dedupe.QueueStats) string {
	if st.Oldest.IsZero() {
		return "-"
	}
	return st.Oldest.UTC().Format(time.RFC3339)
}
