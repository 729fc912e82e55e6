package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
)

const keysUsage = `webhookd keys list [--provider NAME] [--state IN_FLIGHT|QUEUED|COMPLETED|FAILED] [--limit N] [--json]
       webhookd keys get [--json] [--destination NAME] KEY
       webhookd keys delete [--force] [--destination NAME] KEY
       webhookd keys redrive [--destination NAME] KEY...
       webhookd keys redrive --state failed [--provider NAME] [--destination NAME] [--type GLOB] [--since DURATION]

KEY is provider:event-key, the Idempotency-Key value (stripe:evt_123); with
WEBHOOKD_CONFIG, source:event-key, and --destination names the record of
one destination when the event went to several (docs/routing.md).
The store is the one at WEBHOOKD_DATA_DIR; serve may be running on it.
redrive forwards each event's stored request to WEBHOOKD_DOWNSTREAM_URL again
(same Idempotency-Key and headers), records the new answer, prints one line
per event, and exits 0 only when every redrive was delivered; a FAILED event of
a queue destination is requeued instead, for serve's delivery loop.`

// keysPage is how many records one read transaction of `keys list` holds:
// the listing streams, so a large store is neither held in memory nor
// pinned by one long read transaction.
const keysPage = 1000

// runKeys is `webhookd keys`: it reads or edits the dedupe store at
// WEBHOOKD_DATA_DIR, also while serve runs on it (LMDB serialises writers
// across processes). Exit status: 0 on success, 1 for an unknown key or a
// store error, 2 for a usage or configuration error.
func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "Usage: %s\n", keysUsage)
		return 2
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "list":
		return keysList(ctx, args, stdout, stderr)
	case "get":
		return keysGet(ctx, args, stdout, stderr)
	case "delete":
		return keysDelete(ctx, args, stdout, stderr)
	case "redrive":
		return keysRedrive(ctx, args, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprintf(stdout, "Usage: %s\n", keysUsage)
		return 0
	}
	fmt.Fprintf(stderr, "webhookd keys: unknown subcommand %q (list, get, delete or redrive)\n", sub)
	return 2
}

// openKeysStore opens the configured store: for lmdb the existing store
// named by WEBHOOKD_DATA_DIR, creating nothing, with the pruner off (serve
// prunes, and a second pruner would only contend for the writer lock); for
// postgres the shared database; for tiered the shared database, with this
// node's LMDB copy when WEBHOOKD_DATA_DIR holds one (delete removes the copy
// too).
func openKeysStore(ctx context.Context, stderr io.Writer) (dedupe.Store, int) {
	cfg, err := loadConfig()
	if err != nil {
		fmt.Fprintf(stderr, "webhookd: configuration: %v\n", err)
		return nil, 2
	}
	cfg.warnUnknown(stderr)
	return openKeysStoreWith(ctx, cfg, stderr)
}

// openKeysStoreWith is openKeysStore with the configuration loaded.
func openKeysStoreWith(ctx context.Context, cfg *config, stderr io.Writer) (dedupe.Store, int) {
	opts := lmdb.Options{
		Options: dedupe.Options{
			Lease:         cfg.Lease,
			Retention:     cfg.Retention,
			PruneInterval: -1,
		},
		MapSize:    cfg.MapSize,
		MaxMapSize: cfg.MaxMapSize,
	}
	s, err := openStore(ctx, cfg, opts, lmdb.OpenExisting)
	if errors.Is(err, lmdb.ErrNoStore) && cfg.Store == "tiered" {
		// No copy on this machine: the shared records are all there is.
		cfg.Store = "postgres"
		s, err = openStore(ctx, cfg, opts, lmdb.OpenExisting)
	}
	if errors.Is(err, lmdb.ErrNoStore) {
		fmt.Fprintf(stderr, "webhookd keys: %s_DATA_DIR: %v; set it to the directory serve uses\n", envPrefix, err)
		return nil, 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "webhookd keys: %v\n", err)
		return nil, 1
	}
	return s, 0
}

func keysList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("webhookd keys list", keysUsage, stderr)
	provider := fs.String("provider", "", "only this provider's keys: its route name ("+builtinProviderNames()+", or one of WEBHOOKD_PROVIDER_SPECS)")
	state := fs.String("state", "", "only keys in this state: IN_FLIGHT, QUEUED, COMPLETED or FAILED")
	limit := fs.Int("limit", 0, "at most N keys (0: all)")
	asJSON := fs.Bool("json", false, "one JSON object per line (JSON Lines) instead of a table")
	if code, ok := parseFlagsOnly(fs, args, stderr, ""); !ok {
		return code
	}
	opts := dedupe.ListOptions{}
	switch {
	case *limit < 0:
		fmt.Fprintf(stderr, "webhookd keys list: --limit must not be negative\n")
		return 2
	case strings.Contains(*provider, ":"):
		fmt.Fprintf(stderr, "webhookd keys list: --provider takes a provider name (stripe), not a key\n")
		return 2
	case *provider != "":
		opts.Prefix = *provider + ":"
	}
	if *state != "" {
		st, err := dedupe.ParseState(*state)
		if err != nil {
			fmt.Fprintf(stderr, "webhookd keys list: --state: %v\n", err)
			return 2
		}
		opts.State = st
	}
	s, code := openKeysStore(ctx, stderr)
	if s == nil {
		return code
	}
	defer s.Close()

	out := newRecordPrinter(stdout, *asJSON)
	shown := 0
	for *limit == 0 || shown < *limit {
		opts.Limit = keysPage
		if *limit > 0 {
			opts.Limit = min(keysPage, *limit-shown)
		}
		recs, err := s.List(ctx, opts)
		if err != nil {
			fmt.Fprintf(stderr, "webhookd keys list: %v\n", err)
			return 1
		}
		for i := range recs {
			out.row(&recs[i])
		}
		if err := out.flush(); err != nil {
			fmt.Fprintf(stderr, "webhookd keys list: %v\n", err)
			return 1
		}
		shown += len(recs)
		if len(recs) < opts.Limit {
			break
		}
		opts.After = recs[len(recs)-1].Key
	}
	if shown == 0 {
		// On stderr, so that stdout stays an empty table or JSON Lines
		// stream for scripts.
		fmt.Fprintf(stderr, "webhookd keys list: no records%s\n", filterNote(*provider, *state))
	}
	return 0
}

// filterNote says which filters an empty listing was made with.
func filterNote(provider, state string) string {
	var f []string
	if provider != "" {
		f = append(f, "--provider "+provider)
	}
	if state != "" {
		f = append(f, "--state "+state)
	}
	if len(f) == 0 {
		return ""
	}
	return " matching " + strings.Join(f, " ")
}

func keysGet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("webhookd keys get", keysUsage, stderr)
	fs.String("destination", "", "the record of this destination, when the event went to several")
	asJSON := fs.Bool("json", false, "print the record as one JSON object")
	key, s, code := openKeyArg(ctx, fs, args, stderr)
	if s == nil {
		return code
	}
	defer s.Close()
	rec, err := s.Get(ctx, key)
	if err != nil {
		return keyError(stderr, "get", key, err)
	}
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(admin.NewRecordView(&rec, "", true)); err != nil {
			fmt.Fprintf(stderr, "webhookd keys get: %v\n", err)
			return 1
		}
		return 0
	}
	writeRecord(stdout, &rec)
	return 0
}

func keysDelete(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("webhookd keys delete", keysUsage, stderr)
	fs.String("destination", "", "the record of this destination, when the event went to several")
	force := fs.Bool("force", false, "delete even an IN_FLIGHT key whose lease has not passed")
	key, s, code := openKeyArg(ctx, fs, args, stderr)
	if s == nil {
		return code
	}
	defer s.Close()
	rec, err := s.Get(ctx, key)
	was := "unreadable"
	switch {
	case err == nil:
		was = rec.State.String()
	case errors.Is(err, dedupe.ErrNotFound):
		// Not in the store Get reads, which need not be every copy (a
		// tiered node's local copy, say): delete decides whether the key
		// is anywhere.
		was = "absent"
	case errors.Is(err, dedupe.ErrCorrupt) && *force:
	default:
		return keyError(stderr, "delete", key, err)
	}
	del := s.Delete
	if *force {
		del = s.ForceDelete
	}
	// Delete refuses a live claim in the same transaction that would
	// delete it: removing it lets the provider's next retry be forwarded
	// while the first forward is still running, so the event could reach
	// the core service twice. The operator must say so with --force.
	if err := del(ctx, key); err != nil {
		if errors.Is(err, dedupe.ErrInFlight) {
			fmt.Fprintf(stderr, "webhookd keys delete: %s is IN_FLIGHT: a delivery is being forwarded (lease until %s); deleting it now could forward the event twice. Wait for the lease, or pass --force\n",
				key, rec.LeaseUntil.Local().Format(time.RFC3339))
			return 1
		}
		return keyError(stderr, "delete", key, err)
	}
	fmt.Fprintf(stdout, "deleted %s (was %s): the next delivery of this event will be forwarded again\n", displayKey(key), was)
	return 0
}

// openKeyArg parses a get or delete command line, its flags and exactly
// one KEY, and opens the store (openKeysStore). It returns a nil Store and
// the exit status when either fails; the caller closes the Store.
func openKeyArg(ctx context.Context, fs *flag.FlagSet, args []string, stderr io.Writer) (string, dedupe.Store, int) {
	rest, err := parseArgs(fs, args)
	if err != nil {
		return "", nil, flagExit(err)
	}
	if len(rest) != 1 {
		fs.Usage()
		return "", nil, 2
	}
	key := rest[0]
	if err := checkKeyArg(key); err != nil {
		fmt.Fprintf(stderr, "webhookd keys: %v\n", err)
		return "", nil, 2
	}
	s, code := openKeysStore(ctx, stderr)
	if s == nil {
		return "", nil, code
	}
	dest := ""
	if f := fs.Lookup("destination"); f != nil {
		dest = f.Value.String()
	}
	stored, err := dedupe.ResolveKey(ctx, s, key, dest)
	if err != nil {
		s.Close()
		fmt.Fprintf(stderr, "webhookd keys: %v\n", err)
		return "", nil, 2
	}
	return stored, s, code
}

// checkKeyArg refuses a KEY argument that is not a store key, saying what
// one is.
func checkKeyArg(key string) error {
	if _, err := dedupe.ParseKey(key); err != nil {
		return fmt.Errorf("%q is not a key: KEY is provider:event-key, the Idempotency-Key value (stripe:evt_123)", key)
	}
	return nil
}

// displayKey is a stored key as an operator reads it: the Idempotency-Key,
// with the destination after it when it is not the default one.
func displayKey(stored string) string {
	k, err := dedupe.ParseKey(stored)
	if err != nil || k.Destination == "" {
		return printable(stored)
	}
	return printable(k.ID()) + " (destination " + k.Destination + ")"
}

// keyError reports a failed get or delete; an unknown key is exit 1 with a
// message that says where the store was looked for.
func keyError(stderr io.Writer, cmd, key string, err error) int {
	switch {
	case errors.Is(err, dedupe.ErrNotFound):
		fmt.Fprintf(stderr, "webhookd keys %s: no record for %s (never delivered, released after a failed forward, or pruned after %s_RETENTION)\n", cmd, displayKey(key), envPrefix)
	case errors.Is(err, dedupe.ErrInvalidKey):
		fmt.Fprintf(stderr, "webhookd keys %s: %v\n", cmd, err)
		return 2
	default:
		fmt.Fprintf(stderr, "webhookd keys %s: %s: %v\n", cmd, displayKey(key), err)
	}
	return 1
}

// recordPrinter writes `keys list` rows, a table or JSON Lines.
type recordPrinter struct {
	asJSON bool
	enc    *json.Encoder
	tw     *tabwriter.Writer
	header bool
	err    error
}

func newRecordPrinter(w io.Writer, asJSON bool) *recordPrinter {
	return &recordPrinter{asJSON: asJSON, enc: json.NewEncoder(w), tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
}

func (p *recordPrinter) row(r *dedupe.Record) {
	if p.err != nil {
		return
	}
	if p.asJSON {
		p.err = p.enc.Encode(admin.NewRecordView(r, "", false))
		return
	}
	if !p.header {
		fmt.Fprintln(p.tw, "KEY\tSTATE\tATTEMPTS\tSTATUS\tUPDATED\tLEASE UNTIL / EXPIRES")
		p.header = true
	}
	status, until := "-", "expires "+stamp(r.ExpiresAt)
	if r.State == dedupe.InFlight {
		until = "lease until " + stamp(r.LeaseUntil)
	} else {
		status = strconv.Itoa(r.Response.Status)
	}
	fmt.Fprintf(p.tw, "%s\t%s\t%d\t%s\t%s\t%s\n", displayKey(r.Key), r.State, r.Attempts, status, stamp(r.UpdatedAt), until)
}

// flush ends a page. Columns are aligned within a page.
func (p *recordPrinter) flush() error {
	if p.err != nil {
		return p.err
	}
	return p.tw.Flush()
}

// writeRecord prints one record for `keys get`.
func writeRecord(w io.Writer, r *dedupe.Record) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(name, value string) { fmt.Fprintf(tw, "%s\t%s\n", name, value) }
	k, _ := dedupe.ParseKey(r.Key)
	line("key", printable(k.ID()))
	line("source", k.Source)
	line("destination", k.DestinationName())
	line("state", r.State.String())
	if r.State == dedupe.InFlight {
		lease := "passed: the next delivery may take the key over"
		if left := time.Until(r.LeaseUntil); left > 0 {
			lease = left.Round(time.Second).String() + " left"
		}
		line("lease until", stamp(r.LeaseUntil)+" ("+lease+")")
	}
	line("attempts", strconv.FormatUint(uint64(r.Attempts), 10))
	line("created", stamp(r.CreatedAt))
	line("updated", stamp(r.UpdatedAt))
	line("expires", stamp(r.ExpiresAt)+" (then pruned)")
	line("fingerprint", r.Fingerprint)
	if r.State != dedupe.InFlight {
		line("status", strconv.Itoa(r.Response.Status))
		line("content type", printable(r.Response.ContentType))
		line("body", strconv.Itoa(len(r.Response.Body))+" bytes")
	}
	tw.Flush()
	if r.State != dedupe.InFlight && len(r.Response.Body) > 0 {
		body := string(r.Response.Body)
		if !printableText(body) {
			// Raw bytes could drive the terminal; quoted they cannot.
			body = strconv.Quote(body)
		}
		fmt.Fprintln(w, strings.TrimRight(body, "\n"))
	}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05.000 MST")
}

// printable quotes s when it holds anything but printable text, so a key
// or header cannot garble the terminal.
func printable(s string) string {
	if printableText(s) && !strings.ContainsAny(s, "\n\t") {
		return s
	}
	return strconv.Quote(s)
}

// printableText reports whether s is UTF-8 text with no control characters
// other than newlines and tabs.
func printableText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}

// builtinProviderNames lists the provider table's names as prose, for help
// text written before any configuration is read.
func builtinProviderNames() string {
	var names []string
	for _, e := range providerTable() {
		names = append(names, e.Name)
	}
	return orList(names)
}
