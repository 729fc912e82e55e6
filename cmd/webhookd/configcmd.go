package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/routing"
)

const configUsage = `webhookd config check [FILE]

Loads a WEBHOOKD_CONFIG file (FILE, else the variable's) as serve would and
prints each source's route, its destinations and the variables it reads
(names, never values), then each destination. Exit 0 only when it loads;
a file that does not load is one line naming the file, line and key.
(docs/routing.md)`

// runConfig is `webhookd config check [FILE]`.
func runConfig(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("webhookd config", configUsage, stderr)
	rest, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) == 0 || rest[0] != "check" || len(rest) > 2 {
		fs.Usage()
		return 2
	}
	cfg, err := loadConfig()
	if err != nil {
		fmt.Fprintf(stderr, "webhookd: configuration: %v\n", err)
		return 2
	}
	file := cfg.Config
	if len(rest) == 2 {
		file = rest[1]
	}
	if file == "" {
		fmt.Fprintf(stderr, "webhookd config check: name a FILE or set %s\n", envName("CONFIG"))
		return 2
	}
	c, err := loadRouting(cfg, nil, file, os.Environ())
	if err != nil {
		fmt.Fprintf(stdout, "FAIL %v\n", err)
		return 1
	}
	for _, w := range c.Warnings {
		fmt.Fprintf(stderr, "webhookd: warning: %s\n", w)
	}
	if err := printRouting(stdout, c); err != nil {
		return 1
	}
	fmt.Fprintf(stdout, "ok   %s: %d source(s), %d destination(s), %d route(s)\n", file, len(c.Sources), len(c.Destinations), len(c.Routes))
	return 0
}

// printRouting writes c's sources (route, provider, destinations,
// variables) and destinations as two tables.
func printRouting(w io.Writer, c *routing.Config) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tROUTE\tPROVIDER\tDESTINATIONS\tVARIABLES")
	for _, s := range c.Sources {
		fmt.Fprintf(tw, "%s\t/webhooks/%s\t%s\t%s\t%s\n", s.Name, s.Name, s.Entry.Name, orDash(c.DestinationsOf(s)), orDash(s.Variables))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "DESTINATION\tURL\tDELIVERY\tTIMEOUT\tRETRIES\tFAILED_POLICY\tVARIABLES")
	for _, d := range c.Destinations {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.Name, dispatch.RedactURL(d.URL), d.Delivery, d.Timeout, d.Retries, d.FailedPolicy, orDash(d.Variables))
	}
	return tw.Flush()
}

func orDash(items []string) string {
	if len(items) == 0 {
		return "-"
	}
	return strings.Join(items, ",")
}
