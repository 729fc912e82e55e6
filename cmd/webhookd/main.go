// Command webhookd receives payment providers' webhook callbacks, verifies
// them, dedupes them in its store (embedded LMDB, shared Postgres, or LMDB
// in front of Postgres: WEBHOOKD_STORE) and forwards each event to the core
// service at most once. Its subcommands also replay fixtures, stand in for
// the core service, read and edit the store, and back it up. See README.md
// and docs/contract.md.
//
// This package only parses configuration and wires the packages together;
// the providers it serves are the table in providers.go.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/webhookd/webhookd/internal/logbuf"
)

func main() {
	// All of stderr, the log and the commands' messages alike, goes through
	// one coalescing writer: a busy server pays one write(2) for the lines
	// that pile up during the last one, instead of one per line, and the
	// lines keep their order. Each exit flushes it first, so that nothing
	// written before is left behind.
	stderr := logbuf.New(os.Stderr, 0)
	exit := flushThenExit(stderr, os.Exit)
	// Runs only if run panics (exit skips deferred calls): the lines
	// before the panic are written before its trace.
	defer stderr.Flush()
	ctx, stop := notifyContext(stderr, exit)
	code := run(ctx, os.Args[1:], os.Stdout, stderr)
	stop()
	exit(code)
}

// flushThenExit returns the process's exit: it writes what w holds, then
// calls osExit. Flush, not Close: it waits only for the lines written
// before it, so goroutines still logging (serve's, on a second signal)
// cannot keep the exit waiting, and their later lines still go out.
func flushThenExit(w interface{ Flush() error }, osExit func(int)) func(int) {
	return func(code int) {
		_ = w.Flush()
		osExit(code)
	}
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"serve", "run the receiver until SIGINT/SIGTERM (the default)", runServe},
		{"replay", "send fixture files or folders to a receiver, signed as their provider signs (replay -h)", runReplay},
		{"sink", "stand in for the core service: print each forwarded event, answer --status (sink -h)", runSink},
		{"keys", "list | get KEY | delete KEY | redrive KEY...: read or edit the dedupe store, or forward stored requests again, also while serve runs", runKeys},
		{"healthcheck", "GET the running server's /healthz, exit 0 if it answers 200 (Docker HEALTHCHECK) [--url URL] [--timeout D]", runHealthcheck},
		{"backup", "write a compacted, consistent copy of the store to a new directory: backup DEST", runBackup},
		{"providers", "list every provider with its route and variables; providers check PATH... verifies provider spec files (docs/provider-specs.md)", runProviders},
		{"destinations", "destinations list | pause NAME | resume NAME: each destination's delivery, pause and queue, or pause and resume one, also while serve runs (docs/delivery.md)", runDestinations},
		{"config", "config check [FILE]: load a WEBHOOKD_CONFIG file as serve would and print its sources, destinations and variables (docs/routing.md)", runConfig},
		{"check", "verify the store read-only (records, index, file size); exit 1 on damage", runCheck},
		{"help", "print this help", func(_ context.Context, _ []string, stdout, _ io.Writer) int { return usage(stdout) }},
	}
}

// run dispatches to a subcommand and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := "serve"
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	switch name {
	case "-h", "--help", "-help":
		return usage(stdout)
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "webhookd: unknown command %q (see webhookd help)\n", name)
	return 2
}

func usage(w io.Writer) int {
	fmt.Fprintln(w, "webhookd: verify, dedupe and forward payment-provider webhooks, at most once.")
	fmt.Fprintln(w, "\nUsage:\n  webhookd [command] [arguments]\n\nCommands:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nEnvironment variables (name, default, meaning):")
	// The operator's own specs are listed too; one that does not load is
	// said in one line, and help goes on with the built-in providers.
	table, err := userSpecs(os.Getenv(envName("PROVIDER_SPECS")))
	if err != nil {
		fmt.Fprintf(w, "  (%v)\n", err)
		table = providerTable()
	}
	if err := usageVariables(tw, table); err != nil {
		fmt.Fprintln(w, err)
		return 1
	}
	tw.Flush()
	return 0
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(strings.ToUpper(s)))
	return l, err
}

// newLogger builds the process logger from WEBHOOKD_LOG_FORMAT and _LEVEL.
func newLogger(c *config, w io.Writer) *slog.Logger {
	level, _ := parseLevel(c.LogLevel) // checked by config.check
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
