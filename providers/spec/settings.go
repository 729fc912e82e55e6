package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
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
func (s *Spec) signsBody() bool { return s.BodySigned() }

// signsType reports whether every part of the event type is signed: the
// body's members when the body is, the headers the signed text reads.
func (s *Spec) signsType() bool {
	types := []template{s.typ}
	if len(s.cases) > 0 {
		types = types[:0]
		for _, c := range s.cases {
			types = append(types, c.typ)
		}
	}
	for _, t := range types {
		if len(t.parts) == 0 {
			return false
		}
		for _, p := range t.parts {
			switch p.kind {
			case literal:
			case jsonRef, digestRef, bodyRef:
				if !s.signsBody() {
					return false
				}
			case headerRef, formRef:
				if !s.sig.alg.signs() || !s.sig.signed.has(p.kind, p.text) {
					return false
				}
			default:
				return false
			}
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
	// retention, weak and keysVar are what Check found: the store's
	// retention, which bounds a timestamp without a tolerance, and the
	// sizes of the weak keys allowed in the public-key variable keysVar.
	retention time.Duration
	weak      []int
	keysVar   string
	allowVar  string
}

// Variables lists the secrets' variable, then the settings in the spec's
// order.
func (st *Settings) Variables() []providers.Variable {
	s := st.spec
	vars := []providers.Variable{{
		Name: s.variable(s.secret.variable), Help: s.secret.help, Example: s.examples[0].secret, List: true, Secret: true,
		Set: func(v string) error {
			if s.secret.encoding == "pem" {
				// PEM text holds no commas worth splitting at, and a list
				// of files is split by readPublicKeys: one value.
				st.secrets = nil
				if strings.TrimSpace(v) != "" {
					st.secrets = []string{v}
				}
				return nil
			}
			list, err := providers.SplitList(v)
			st.secrets = list
			return err
		},
	}}
	for _, d := range s.settings {
		v := providers.Variable{Name: s.variable(d.variable), Default: d.def, Help: d.help,
			Set: func(v string) error {
				if _, err := time.ParseDuration(v); d.duration && v != "" && err != nil {
					return fmt.Errorf("cannot parse %q as a duration", v)
				}
				if _, ok := d.choices[v]; len(d.choices) > 0 && v != "" && !ok {
					return fmt.Errorf("%q is not one of %s", v, strings.Join(slices.Sorted(maps.Keys(d.choices)), ", "))
				}
				if d.pattern != nil && v != "" && !d.pattern.MatchString(v) {
					return fmt.Errorf("%q does not match %s", v, strings.TrimSuffix(strings.TrimPrefix(d.pattern.String(), "^(?:"), ")$"))
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
// It keeps env.Retention for Build, which bounds the timestamp by it.
func (st *Settings) Check(env providers.Env) error {
	s := st.spec
	st.retention = env.Retention
	enabled := len(st.secrets) > 0
	if s.sig.alg.public != noPublicKey && enabled {
		name := env.Var(s.variable(s.secret.variable))
		allow := st.value(allowWeakKeys) == "true"
		for _, v := range st.secrets {
			_, weak, err := readPublicKeys(v, s.sig.alg.public, allow, env.Var(s.variable(allowWeakKeys)))
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			st.weak = append(st.weak, weak...)
		}
		st.keysVar, st.allowVar = name, env.Var(s.variable(allowWeakKeys))
	}
	if s.ts != nil && s.ts.tolerance >= 0 {
		d := s.settings[s.ts.tolerance]
		v := st.values[d.variable]
		if v == "" {
			v = d.def
		}
		tol, err := time.ParseDuration(v)
		switch {
		case d.def == "" && (v == "" || err == nil && tol == 0):
			// Unset: the retention alone bounds the timestamp.
		case err != nil:
			return fmt.Errorf("%s: required: how old a timestamp may be", env.Var(s.variable(d.variable)))
		case d.longerThan > 0 && tol <= d.longerThan:
			// Checked first, and while the provider is off too: it is
			// about the gateway, not the store.
		default:
			if err := env.CheckTolerance(s.variable(d.variable), tol, enabled); err != nil {
				return err
			}
		}
	}
	for _, d := range s.settings {
		tol, err := time.ParseDuration(st.values[d.variable])
		if d.longerThan > 0 && err == nil && tol != 0 && tol <= d.longerThan {
			return fmt.Errorf("%s: %s must be longer than %s", env.Var(s.variable(d.variable)), tol, d.longerWhat)
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
	p, err := st.spec.New(st.secrets, st.values, nil, WithRetention(st.retention))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// value is a setting's value, or its default.
func (st *Settings) value(variable string) string {
	if v := st.values[variable]; v != "" {
		return v
	}
	if i := st.spec.setting(variable); i >= 0 {
		return st.spec.settings[i].def
	}
	return ""
}

// Warnings names the public-key variable of each RSA key shorter than
// MinRSABits that WEBHOOKD_<NAME>_ALLOW_WEAK_KEYS let in (Check found
// them), with its size.
func (st *Settings) Warnings(providers.Env) []string {
	var out []string
	for _, bits := range st.weak {
		out = append(out, fmt.Sprintf("%s: a %d-bit RSA key is accepted (shorter than %d bits, allowed by %s)",
			st.keysVar, bits, MinRSABits, st.allowVar))
	}
	return out
}

// Spec returns the spec whose variables st holds.
func (st *Settings) Spec() *Spec { return st.spec }

// BodySigned reports whether the signature covers the body (all of it, or
// a digest of it): a route condition (where) may read only a body that
// is signed. A token (Flutterwave's, PhonePe's) signs nothing.
func (s *Spec) BodySigned() bool { return s.sig.alg.signs() && s.sig.signed.has(bodyRef, "") }

// Examples is how many example deliveries the spec verifies.
func (s *Spec) Examples() int { return len(s.examples) }
