package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
)

const checkUsage = `usage: webhookd check

Checks the dedupe store in WEBHOOKD_DATA_DIR without changing it, also while
webhookd serve is running on it: the data file against its LMDB header, then
every record (it decodes, its state is known, its expiry and creation-time
index entries are there), every index entry, and the per-state counts. Exits 0 with a one-line summary when the store
is sound, 1 with the damage found (counts and example keys) otherwise, 2 on a
usage or configuration error. LMDB keeps no checksums: a flipped bit in a
body or a time is not seen. Restore a damaged store from a backup
(webhookd backup).
`

// runCheck implements `webhookd check`.
func runCheck(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprint(stdout, checkUsage)
		return 0
	}
	if len(args) != 0 {
		fmt.Fprint(stderr, checkUsage)
		return 2
	}
	cfg, err := loadConfig()
	if err != nil {
		fmt.Fprintf(stderr, "webhookd: configuration: %v\n", err)
		return 2
	}
	if cfg.Store == "postgres" {
		fmt.Fprintf(stderr, "webhookd check: checks the lmdb store only; with %s_STORE=postgres the records are in Postgres\n", envPrefix)
		return 1
	}
	r, err := lmdb.Check(cfg.DataDir)
	if err != nil {
		if errors.Is(err, lmdb.ErrNoStore) {
			fmt.Fprintf(stderr, "webhookd check: %s_DATA_DIR=%s: %v\n", envPrefix, cfg.DataDir, err)
		} else {
			fmt.Fprintf(stderr, "webhookd check: %v\n", err)
		}
		return 1
	}
	records := fmt.Sprintf("%d records (%d IN_FLIGHT, %d COMPLETED, %d FAILED), %d index entries (%d stale), %d creation-time entries (%d stale)",
		r.Records, r.ByState[dedupe.InFlight], r.ByState[dedupe.Completed], r.ByState[dedupe.Failed], r.Index, r.Stale, r.Created, r.CreatedStale)
	if !r.Damaged() {
		fmt.Fprintf(stdout, "%s is sound: %s; %d bytes, %d pages of %d\n", r.File, records, r.Size, r.Pages, r.PageSize)
		return 0
	}
	n := 0
	for _, d := range r.Damage {
		n += d.Count
	}
	fmt.Fprintf(stdout, "%s is DAMAGED: %d problems in %s\n", r.File, n, records)
	for _, d := range r.Damage {
		more := ""
		if d.Count > len(d.Examples) {
			more = ", ..."
		}
		fmt.Fprintf(stdout, "  %d %s: %s%s\n", d.Count, d.Kind, strings.Join(d.Examples, ", "), more)
	}
	fmt.Fprintln(stdout, "Restore the store from a backup (webhookd backup): see docs/store.md, \"Backup, restore and check\".")
	return 1
}
