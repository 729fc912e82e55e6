package spec

import (
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"time"
)

// BuiltinNamed returns the built-in spec called name, compiled from its
// own file (builtin/<name>.yaml, as builtin/README.md names them) without
// compiling the others, or an error naming it when the binary embeds none
// of that name.
func BuiltinNamed(name string) (*Spec, error) {
	file := path.Join("builtin", name+".yaml")
	data, err := fs.ReadFile(builtinFS, file)
	if err != nil || path.Base(file) != name+".yaml" {
		return nil, fmt.Errorf("no built-in provider spec named %q", name)
	}
	s, err := Load("providers/spec/"+file, data)
	if err != nil {
		return nil, err
	}
	if s.name != name {
		return nil, fmt.Errorf("providers/spec/%s: named %q, not %q", file, s.name, name)
	}
	return s, nil
}

// NewBuiltin builds the built-in provider called name with secrets (the
// first signs) and its settings by variable without the provider's prefix
// (TOLERANCE; a missing one takes its default), as serve builds it from
// WEBHOOKD_<NAME>_*. clock is nil for time.Now; a fixed clock makes Sign
// sign at that time. Tests and the load tool get Stripe, Paddle and every
// other built-in provider by name through it, so they exercise the
// provider serve runs.
func NewBuiltin(name string, secrets []string, settings map[string]string, clock func() time.Time, opts ...Option) (*Provider, error) {
	s, err := BuiltinNamed(name)
	if err != nil {
		return nil, err
	}
	return s.New(secrets, settings, clock, opts...)
}

// SignBuiltin returns the headers that the built-in provider called name
// sends with body signed with secret at time at (Stripe's
// Stripe-Signature "t=...,v1=...", Paddle's Paddle-Signature
// "ts=...;h1=..."): what a test posts to /webhooks/<name>, fresh or as
// old as it needs.
func SignBuiltin(name, secret string, at time.Time, body []byte) (http.Header, error) {
	p, err := NewBuiltin(name, []string{secret}, nil, func() time.Time { return at })
	if err != nil {
		return nil, err
	}
	d, err := p.Sign(body)
	if err != nil {
		return nil, err
	}
	return d.Header, nil
}
