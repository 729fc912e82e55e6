package providers

import (
	"fmt"
	"time"
)

// Entry is one provider's line in webhookd's provider table
// (cmd/webhookd/providers.go): everything the command needs to configure,
// serve, replay and document the provider. Each adapter package returns its
// own Entry, so adding a provider is its package plus one line in that
// table; serve, replay, help and the unknown-variable check all read it.
type Entry struct {
	// Name is the adapter's Name: its route segment and key prefix.
	Name string
	// Settings returns a pointer to a new, empty struct of the provider's
	// variables. Each field is one variable, tagged with its name without
	// the command's prefix (envconfig:"ACME_SECRETS"), its default
	// (default:"5m") and its help text (desc:"..."); no value a test sets,
	// so that nothing but the operator's own secrets can enable it. The
	// command fills the struct: it accepts string, bool, int, int64,
	// time.Duration and []string fields; a []string is a comma-separated
	// list whose items are trimmed of spaces and must not be empty.
	Settings func() Settings
	// Secret is the variable (without prefix) that enables the provider and
	// holds what `webhookd replay` signs with.
	Secret string
	// SecretNoun says what Secret holds ("signing secret"), for messages.
	SecretNoun string
	// SignedBody says the provider's signature covers the whole body, and
	// SignedType the event type, so that routing reads only signed data: a
	// WEBHOOKD_CONFIG route with a where (fields of the body) or types
	// (globs on the event type) may reach the provider's sources only when
	// it is set. The zero value signs neither, which is the safe default
	// for a provider that does not say.
	SignedBody, SignedType bool
}

// Settings is a provider's variables once the command has filled them in.
type Settings interface {
	// Check validates the settings beyond parsing. Its error starts with
	// env.Var of the variable at fault and never quotes a secret.
	Check(env Env) error
	// Build returns the adapter, or nil and no error when the settings
	// leave the provider off (its Secret is not set). An adapter that
	// cannot sign (no Signer, or a Sign that wraps ErrCannotSign) has its
	// fixtures replayed with their captured headers.
	Build() (Provider, error)
}

// Env is what a provider's Check may need from the rest of the
// configuration.
type Env struct {
	// Var turns a variable's name as tagged (MIDTRANS_SERVER_KEY) into the
	// name the operator sets, for messages: providers never spell the
	// command's prefix themselves.
	Var func(name string) string
	// Lease is how long a claim on an event key is honoured, and
	// DispatchTimeout the forward's budget: an adapter that takes time
	// before the forward (a confirmation call) needs the lease to cover
	// both.
	Lease, DispatchTimeout time.Duration
	// StoreCalls is the store's share of a lease: the rest of the claim
	// call and the record of the answer, each bounded by the store timeout.
	StoreCalls time.Duration
	// SharedStore says the dedupe store is shared by several nodes
	// (postgres, tiered): a defence an adapter keeps in its own memory
	// then holds on one node only.
	SharedStore bool
	// Retention is how long a COMPLETED or FAILED record is kept
	// (WEBHOOKD_RETENTION): once it is pruned, a captured delivery of its
	// event is forwarded again unless the adapter refuses it as too old.
	// Zero when unknown; then nothing is checked against it.
	Retention time.Duration
}

// TypeConfirmer is implemented by a provider's Settings when its event
// type is trusted only as its settings say: a type its signature does not
// cover, confirmed with the gateway's status API when that check is on.
// Routing (a WEBHOOKD_CONFIG route's types) reads Entry.SignedType only
// while TypesConfirmed is true.
type TypeConfirmer interface {
	TypesConfirmed() bool
}

// Warner is implemented by a provider's Settings when a configuration that
// passes Check may still leave a known gap open: an event status that the
// provider's signature does not cover, with the confirmation that closes
// it turned off. `webhookd serve` logs each warning at start-up. Warnings
// returns nothing while the provider is off, and never quotes a secret.
type Warner interface {
	Warnings(env Env) []string
}

// CheckTolerance refuses a provider's replay tolerance (the variable name,
// as tagged) that is not positive, or shorter than a second, whether or not
// the provider is enabled,
// so that enabling it later cannot start without the replay check; while
// the provider is enabled it must also pass BelowRetention.
func (e Env) CheckTolerance(name string, tolerance time.Duration, enabled bool) error {
	if tolerance <= 0 {
		return fmt.Errorf("%s: must be positive (0 would disable the replay check)", e.Var(name))
	}
	if tolerance < time.Second {
		// Most gateways sign whole seconds: a genuine event is up to a
		// second old the moment it is signed.
		return fmt.Errorf("%s: %s is shorter than 1s: signed timestamps count whole seconds, so genuine events would be refused", e.Var(name), tolerance)
	}
	if !enabled {
		return nil
	}
	return e.BelowRetention(name, tolerance)
}

// BelowRetention refuses a provider's tolerance (the variable name, as
// tagged) for the age of a signed timestamp that is not shorter than
// Retention: a capture could then outlive its record and still verify. Its
// error names both variables, on one line.
func (e Env) BelowRetention(name string, tolerance time.Duration) error {
	if e.Retention <= 0 || tolerance < e.Retention {
		return nil
	}
	return fmt.Errorf("%s: %s must be shorter than %s (%s): a capture older than the retention would be forwarded again",
		e.Var(name), tolerance, e.Var("RETENTION"), e.Retention)
}
