package spec

import (
	"fmt"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// Name is the spec's name: its route segment, key prefix and, upper-cased,
// its variables' prefix.
func (s *Spec) Name() string { return s.name }

// File is where the spec was loaded from, as its messages name it.
func (s *Spec) File() string { return s.file }

// Docs is the URL of the gateway's description of its signature.
func (s *Spec) Docs() string { return s.docs }

// Batch reports whether one delivery may carry several events.
func (s *Spec) Batch() bool { return s.batch != "" }

// Entry is the spec's line in webhookd's provider table: its variables are
// WEBHOOKD_<NAME>_<variable>, read, documented and checked like a Go
// adapter's.
func (s *Spec) Entry() providers.Entry {
	return providers.Entry{
		Name:       s.name,
		Settings:   func() providers.Settings { return &Settings{spec: s, values: map[string]string{}} },
		Secret:     s.variable(s.secret.variable),
		SecretNoun: s.secret.noun,
		SignedBody: s.signsBody(),
		SignedType: s.signsType(),
	}
}

// signsBody reports whether the signed text holds the whole body: a token
// scheme signs nothing, and a manifest of a few values (Mercado Pago's)
// not the body.
func (s *Spec) signsBody() bool {
	for _, p := range s.sig.signed.parts {
		if p.kind == bodyRef {
			return true
		}
	}
	return false
}

// signsType reports whether every part of the event type is signed: the
// body's members when the body is, the headers the signed text reads.
func (s *Spec) signsType() bool {
	if len(s.typ.parts) == 0 {
		return false
	}
	signedHeader := map[string]bool{}
	for _, p := range s.sig.signed.parts {
		if p.kind == headerRef {
			signedHeader[p.text] = true
		}
	}
	for _, p := range s.typ.parts {
		switch p.kind {
		case literal:
		case jsonRef, digestRef, bodyRef:
			if !s.signsBody() {
				return false
			}
		case headerRef:
			if !signedHeader[p.text] {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// variable is a spec variable's name without the command's prefix.
func (s *Spec) variable(name string) string { return s.env + "_" + name }

// Settings are a spec's variables once the command has filled them in.
type Settings struct {
	spec    *Spec
	secrets []string
	// values are the settings by variable (without the spec's prefix).
	values map[string]string
}

// Variables lists the secrets' variable, then the settings in the spec's
// order.
func (st *Settings) Variables() []providers.Variable {
	s := st.spec
	// The tests set the example with a second item of their own, made by
	// appending to it; an encoded secret lists its second item itself.
	example := s.examples[0].secret
	if s.secret.encoding != "raw" {
		example += "," + example
	}
	vars := []providers.Variable{{
		Name: s.variable(s.secret.variable), Help: s.secret.help, Example: example, List: true, Secret: true,
		Set: func(v string) error {
			list, err := providers.SplitList(v)
			st.secrets = list
			return err
		},
	}}
	for _, d := range s.settings {
		v := providers.Variable{Name: s.variable(d.variable), Default: d.def, Help: d.help,
			Set: func(v string) error {
				if _, err := time.ParseDuration(v); d.duration && err != nil {
					return fmt.Errorf("cannot parse %q as a duration", v)
				}
				st.values[d.variable] = v
				return nil
			}}
		if d.required {
			v.Example = s.examples[0].settings[d.variable]
		}
		vars = append(vars, v)
	}
	return vars
}

// Check refuses a tolerance that is not positive (or, while the provider
// is enabled, not shorter than the retention), and a required setting
// left empty while the provider is enabled. Its errors name the variable.
func (st *Settings) Check(env providers.Env) error {
	s := st.spec
	enabled := len(st.secrets) > 0
	if s.ts != nil {
		d := s.settings[s.ts.tolerance]
		v := st.values[d.variable]
		if v == "" {
			v = d.def
		}
		tol, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s: required: how old a timestamp may be", env.Var(s.variable(d.variable)))
		}
		if err := env.CheckTolerance(s.variable(d.variable), tol, enabled); err != nil {
			return err
		}
	}
	for _, d := range s.settings {
		if enabled && d.required && st.values[d.variable] == "" && d.def == "" {
			return fmt.Errorf("%s: required while %s is set", env.Var(s.variable(d.variable)), env.Var(s.variable(s.secret.variable)))
		}
	}
	return nil
}

// Build returns the provider, or nil while its secrets are not set.
func (st *Settings) Build() (providers.Provider, error) {
	if len(st.secrets) == 0 {
		return nil, nil
	}
	p, err := st.spec.New(st.secrets, st.values, nil)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Spec returns the spec whose variables st holds.
func (st *Settings) Spec() *Spec { return st.spec }

// Examples is how many example deliveries the spec verifies.
func (s *Spec) Examples() int { return len(s.examples) }
