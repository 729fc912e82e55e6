package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/replay"
)

const replayUsage = `webhookd replay [--url URL] [--provider NAME] [--repeat N] [--concurrency C] [--timeout D] [--id-suffix S] PATH...

PATH is a fixture file (a provider's raw request body) or a folder, whose
*.json files are sent (not its subfolders). A fixture's provider is its
folder's name unless --provider says otherwise; it is signed with the same
WEBHOOKD_* secret serve verifies with. PayPal fixtures, which only PayPal
can sign, are sent with the headers captured beside them
(<name>.headers.json), and skipped, with the reason, when those do not
verify with this configuration. --id-suffix S appends S to each
fixture's event id, so that the fixtures are new events to the receiver:
a rehearsal runs again, with another suffix, without deleting keys; the
same suffix again is a provider's retry of those events. Exit status: 0 when every answer is
2xx or 409, 1 otherwise (or a request failed), 2 for a usage or
configuration error, found before anything is sent.
`

// runReplay is `webhookd replay`: it signs fixtures with the secrets serve
// verifies them with (the same WEBHOOKD_* variables) and sends them to a
// running receiver. Exit status: 0 when every answer is 2xx or 409, 1 when
// any is not (or a request failed), 2 for a usage or configuration error,
// which is found before anything is sent.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("webhookd replay", replayUsage, stderr)
	target := fs.String("url", "http://localhost:8080", "the receiver's base URL; a fixture of provider p goes to URL/webhooks/p")
	provider := fs.String("provider", "", "sign and send every fixture as this provider (default: each file's folder name)")
	repeat := fs.Int("repeat", 1, "send each fixture N times, as a provider's retries or a duplicate storm would")
	conc := fs.Int("concurrency", 1, "requests in flight at once; the copies of one fixture go out together")
	timeout := fs.Duration("timeout", replay.DefaultTimeout, "bound on each request, answer included")
	suffix := fs.String("id-suffix", "", "append this to each fixture's event id (letters, digits, _ and -), making the fixtures new events")
	paths, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "webhookd replay: "+format+"\n", a...)
		return code
	}
	switch {
	case len(paths) == 0:
		fs.Usage()
		return 2
	case *repeat < 1:
		return fail(2, "--repeat must be at least 1, got %d", *repeat)
	case *conc < 1:
		return fail(2, "--concurrency must be at least 1, got %d", *conc)
	case *timeout <= 0:
		return fail(2, "--timeout must be positive, got %s", *timeout)
	case !validIDSuffix(*suffix):
		return fail(2, "--id-suffix %q: use up to 32 letters, digits, _ and - (such as _r2), which every provider's ids allow", *suffix)
	}

	fixtures, err := replay.Load(paths, *provider)
	if err != nil {
		return fail(2, "%v", err)
	}
	cfg, err := loadConfig()
	if err != nil {
		fmt.Fprintf(stderr, "webhookd: configuration: %v\n", err)
		return 2
	}
	cfg.warnUnknown(stderr)
	signers, verifiers, err := replaySigners(cfg, fixtures)
	if err != nil {
		return fail(2, "%v", err)
	}
	rep, err := replay.Run(ctx, fixtures, replay.Options{
		URL:         *target,
		Signers:     signers,
		Verifiers:   verifiers,
		Repeat:      *repeat,
		Concurrency: *conc,
		Timeout:     *timeout,
		IDSuffix:    *suffix,
	})
	if err != nil {
		return fail(2, "%v", err)
	}
	if err := rep.WriteSummary(stdout); err != nil {
		return fail(1, "%v", err)
	}
	if !rep.OK() {
		return 1
	}
	return 0
}

// replaySigners returns the signer of every provider the fixtures name,
// built by buildRegistry from the same configuration serve uses, or an
// error naming the variable to set. An adapter that cannot sign (PayPal:
// only PayPal holds its key) is returned among the verifiers instead:
// replay sends its fixtures with their captured headers, once they verify
// with this configuration.
func replaySigners(cfg *config, fixtures []replay.Fixture) (map[string]providers.Signer, map[string]providers.Provider, error) {
	reg, err := buildRegistry(cfg)
	if err != nil {
		return nil, nil, err
	}
	signers := map[string]providers.Signer{}
	verifiers := map[string]providers.Provider{}
	for _, f := range fixtures {
		if _, done := signers[f.Provider]; done {
			continue
		}
		if _, done := verifiers[f.Provider]; done {
			continue
		}
		entry, known := cfg.entry(f.Provider)
		if !known && cfg.ProviderSpecs == "" {
			// Most likely a provider spec of the operator's own.
			return nil, nil, fmt.Errorf("%s: %q is not a provider (%s) while %s is unset: for a gateway described by a provider spec, set it to the spec's file or folder; else keep fixtures in a folder named after their provider, or pass --provider",
				f.Path, f.Provider, cfg.providerNames(), envName("PROVIDER_SPECS"))
		}
		if !known {
			return nil, nil, fmt.Errorf("%s: %q is not a provider (%s): keep fixtures in a folder named after their provider, or pass --provider", f.Path, f.Provider, cfg.providerNames())
		}
		p, ok := reg.Lookup(f.Provider)
		if !ok {
			return nil, nil, fmt.Errorf("%s is not set: replay signs %s fixtures (%s) with the %s serve verifies them with", envName(entry.Secret), f.Provider, f.Path, entry.SecretNoun)
		}
		if _, err := providers.Sign(p, f.Body); errors.Is(err, providers.ErrCannotSign) {
			verifiers[f.Provider] = p
			continue
		}
		signers[f.Provider] = p.(providers.Signer)
	}
	return signers, verifiers, nil
}

// validIDSuffix reports whether s is what --id-suffix takes: up to 32
// characters that no provider's id format or event key (whose parts are
// separated by ':') treats specially.
func validIDSuffix(s string) bool {
	if len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
