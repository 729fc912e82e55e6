package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/webhookd/webhookd/providers/spec"
)

const providersUsage = `webhookd providers
webhookd providers check PATH...

Without arguments, lists every provider this binary serves (built in, and
from WEBHOOKD_PROVIDER_SPECS) with its route, where it comes from, whether
this configuration enables it, and its variables (with defaults); with
WEBHOOKD_CONFIG, then the file's sources and destinations (as config check).

check loads each provider spec file (or every *.yaml in a folder) and
verifies its own example deliveries (docs/provider-specs.md); it prints one
line per spec and exits 0 only when every one passes.
`

// runProviders is `webhookd providers`.
func runProviders(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("webhookd providers", providersUsage, stderr)
	rest, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) > 0 {
		if rest[0] != "check" {
			fs.Usage()
			return 2
		}
		return checkSpecs(rest[1:], stdout, stderr)
	}
	cfg, err := loadConfig()
	if err != nil {
		fmt.Fprintf(stderr, "webhookd: configuration: %v\n", err)
		return 2
	}
	cfg.warnUnknown(stderr)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tROUTE\tFROM\tENABLED\tVARIABLES")
	for _, p := range cfg.providers {
		from := "Go"
		if st, ok := p.settings.(*spec.Settings); ok {
			from = st.Spec().File()
		}
		enabled := "no"
		if a, err := p.settings.Build(); err == nil && a != nil {
			enabled = "yes"
		}
		var vars []string
		for _, v := range envVars(p.entry.Settings()) {
			if v.def != "" {
				vars = append(vars, v.key+"="+v.def)
			} else {
				vars = append(vars, v.key)
			}
		}
		fmt.Fprintf(tw, "%s\t/webhooks/%s\t%s\t%s\t%s\n", p.entry.Name, p.entry.Name, from, enabled, strings.Join(vars, " "))
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	if cfg.Config == "" {
		return 0
	}
	// With a file, the sources are what serve routes; ENABLED above says
	// only what the variables alone would enable.
	c, err := loadRouting(cfg, nil, cfg.Config, os.Environ())
	if err != nil {
		fmt.Fprintf(stderr, "webhookd: configuration: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "\nsources of %s:\n", cfg.Config)
	if err := printRouting(stdout, c); err != nil {
		return 1
	}
	return 0
}

// checkSpecs is `webhookd providers check PATH...`: each path's specs are
// loaded (their examples verified) and checked against the built-in
// providers and the specs before them for a name or variable taken twice.
func checkSpecs(paths []string, stdout, stderr io.Writer) int {
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "webhookd providers check: name at least one spec file or folder")
		return 2
	}
	table := providerTable()
	builtin, err := spec.Builtin()
	if err != nil {
		fmt.Fprintf(stdout, "FAIL built-in specs: %v\n", err)
		return 1
	}
	code := 0
	files, err := specFiles(paths)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL %v\n", err)
		return 1
	}
	for _, path := range files {
		specs, err := spec.LoadPath(path)
		if err != nil {
			fmt.Fprintf(stdout, "FAIL %v\n", err)
			code = 1
			continue
		}
		for _, s := range specs {
			// A built-in spec's own file (providers/spec/builtin) is
			// that provider, not a second one of the same name.
			if slices.ContainsFunc(builtin, s.SameSource) {
				fmt.Fprintf(stdout, "ok   %s: %s, /webhooks/%s, %d example(s) verified (built in)\n", s.File(), s.Name(), s.Name(), s.Examples())
				continue
			}
			next, err := addSpecs(table, []*spec.Spec{s})
			if err != nil {
				fmt.Fprintf(stdout, "FAIL %v\n", err)
				code = 1
				continue
			}
			table = next
			fmt.Fprintf(stdout, "ok   %s: %s, /webhooks/%s, %d example(s) verified\n", s.File(), s.Name(), s.Name(), s.Examples())
		}
	}
	return code
}

// specFiles lists paths with each directory replaced by its *.yaml and
// *.yml files, so that check reports on every file of a folder, not only
// up to the first that fails.
func specFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		for _, pattern := range []string{"*.yaml", "*.yml"} {
			m, err := filepath.Glob(filepath.Join(p, pattern))
			if err != nil {
				return nil, err
			}
			found = append(found, m...)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no *.yaml spec files in the directory", p)
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}
