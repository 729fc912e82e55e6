package spec

import (
	"crypto"
	"crypto/hmac"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
)

// Verify's errors. Each wraps providers.ErrUnauthorized and says which
// check failed without quoting a header, a signature or a secret; the
// Provider adds its name.
var (
	// ErrNotSigned means the signature header is missing or empty.
	ErrNotSigned = fmt.Errorf("%w: no signature header", providers.ErrSignatureMissing)
	// ErrInvalidHeader means the signature header cannot be read: sent
	// twice when the spec says it is sent once, longer than
	// MaxHeaderBytes, or a named item the signed text reads given twice.
	ErrInvalidHeader = fmt.Errorf("%w: invalid signature header", providers.ErrSignatureInvalid)
	// ErrMissingPart means a header, query value or signature item that
	// the signed text reads is missing, empty or given more than once.
	ErrMissingPart = fmt.Errorf("%w: a signed part is missing or repeated", providers.ErrSignatureMissing)
	// ErrInvalidTimestamp means the timestamp is not a plain decimal
	// number.
	ErrInvalidTimestamp = fmt.Errorf("%w: invalid timestamp", providers.ErrTimestamp)
	// ErrTooOld means the timestamp is older than the tolerance.
	ErrTooOld = fmt.Errorf("%w: timestamp older than the tolerance", providers.ErrTimestamp)
	// ErrExpired means the timestamp is older than the retention
	// (WithRetention): the record of its event may be pruned, so a capture
	// would be forwarded again. It applies with or without a tolerance.
	ErrExpired = fmt.Errorf("%w: timestamp older than the retention", providers.ErrTimestamp)
	// ErrTooNew means the timestamp is further ahead of the clock than
	// the tolerance (window: both).
	ErrTooNew = fmt.Errorf("%w: timestamp ahead of the clock by more than the tolerance", providers.ErrTimestamp)
	// ErrNoValidSignature means no signature (or token) matches under any
	// configured secret.
	ErrNoValidSignature = fmt.Errorf("%w: no valid signature", providers.ErrSignatureInvalid)
)

// Limits on what Verify reads, so that a crafted header cannot cost
// unbounded parsing and MACs.
const (
	// MaxHeaderBytes is the most signature header Verify reads, all
	// values together.
	MaxHeaderBytes = 8 << 10
	// MaxSignatures is how many signatures Verify compares; later ones
	// are ignored.
	MaxSignatures = 16
)

// Provider is a spec compiled with its secrets and settings: a provider
// adapter like the hand-written ones. It is safe for concurrent use.
type Provider struct {
	s *Spec
	// macs holds one keyed MAC per secret (HMAC specs); tokens the
	// secrets as given (token specs).
	macs   []*macKey
	tokens []string
	// plain and plainSecrets are a plain digest's hash and the secrets
	// its text holds.
	plain        func() hash.Hash
	plainSecrets []string
	// keys are the sender's public keys (public-key specs); signer, set
	// by tests only, signs as the sender would.
	keys   []publicKey
	signer crypto.Signer
	// sigName names the signature items: the spec's, or its setting's
	// choice.
	sigName string
	// ack is the acknowledgement, its settings filled in.
	ack *providers.Acknowledgement
	// signed is the spec's signed text with the settings filled in.
	signed []part
	// values are the settings' values, by index.
	values []string
	// tolerance is 0 when the spec's timestamp has none; retention is 0
	// when unknown (New without WithRetention).
	tolerance, retention time.Duration
	clock                func() time.Time
	// scratch holds the signed text's parts other than the body (a
	// *[]byte), reused across deliveries.
	scratch sync.Pool
}

// Option configures a Provider built by Spec.New.
type Option func(*Provider)

// WithRetention refuses (ErrExpired) a timestamp older than retention
// (WEBHOOKD_RETENTION), whatever the tolerance, or without one: once the
// record of its event is pruned, a capture would otherwise be forwarded
// again. Settings.Build passes the retention Check saw.
func WithRetention(retention time.Duration) Option {
	return func(p *Provider) { p.retention = max(retention, 0) }
}

// New builds a Provider of s with secrets (the first signs) and the
// settings' values by variable (a missing one takes its default). clock
// is nil for time.Now.
func (s *Spec) New(secrets []string, settings map[string]string, clock func() time.Time, opts ...Option) (*Provider, error) {
	p := &Provider{s: s, clock: clock, values: make([]string, len(s.settings))}
	for _, opt := range opts {
		opt(p)
	}
	if p.clock == nil {
		p.clock = time.Now
	}
	for i, d := range s.settings {
		v, ok := settings[d.variable]
		if !ok || v == "" {
			v = d.def
		}
		if d.choices != nil {
			c, ok := d.choices[v]
			if !ok {
				return nil, fmt.Errorf("%s: %s: %q is not one of its choices", s.name, d.variable, v)
			}
			v = c
		}
		p.values[i] = v
	}
	p.sigName = s.sig.name
	if s.sig.nameSetting >= 0 {
		p.sigName = p.values[s.sig.nameSetting]
	}
	if s.ts != nil && s.ts.tolerance >= 0 {
		d := s.settings[s.ts.tolerance]
		v := p.values[s.ts.tolerance]
		tol, err := time.ParseDuration(v)
		switch {
		case d.def == "" && (v == "" || err == nil && tol == 0):
			// Unset, a tolerance without a default leaves the retention
			// alone to bound the timestamp.
		case err != nil || tol <= 0:
			return nil, fmt.Errorf("%s: %s must be a positive duration", s.name, d.variable)
		default:
			p.tolerance = tol
		}
	}
	p.ack = s.ack
	if s.ackBody != nil {
		ack := *s.ack
		ack.Body = []byte(renderSettings(p.bind(s.ackBody.parts)))
		p.ack = &ack
	}
	if s.sig.alg.public != noPublicKey {
		// Only RSA keys come in sizes (ALLOW_WEAK_KEYS is an rsa-sha256
		// spec's setting).
		allow := true
		if i := s.setting(allowWeakKeys); i >= 0 {
			allow = p.values[i] == "true"
		}
		if len(secrets) == 0 {
			return nil, fmt.Errorf("%s: no %s configured", s.name, s.secret.noun)
		}
		for _, v := range secrets {
			keys, _, err := readPublicKeys(v, s.sig.alg.public, allow, s.variable(allowWeakKeys))
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", s.name, s.secret.variable, err)
			}
			p.keys = append(p.keys, keys...)
		}
		p.signed = p.bind(s.sig.signed.parts)
		return p, nil
	}
	if err := adapter.Check(s.name, s.secret.noun, secrets); err != nil {
		return nil, err
	}
	for i, secret := range secrets {
		if s.sig.alg.hash == nil {
			if d := s.secret.tokenDigest; d != nil {
				h := d.new()
				h.Write([]byte(secret))
				secret = hex.EncodeToString(h.Sum(nil))
			}
			p.tokens = append(p.tokens, secret)
			continue
		}
		key, err := s.secret.decode(strings.TrimPrefix(secret, s.secret.trimPrefix))
		if err != nil || len(key) == 0 {
			return nil, fmt.Errorf("%s: %s %d of %d does not decode", s.name, s.secret.noun, i+1, len(secrets))
		}
		if s.sig.alg.plain {
			p.plain = s.sig.alg.hash
			p.plainSecrets = append(p.plainSecrets, string(key))
			continue
		}
		p.macs = append(p.macs, newMACKey(s.sig.alg.hash, key))
	}
	p.signed = p.bind(s.sig.signed.parts)
	return p, nil
}

// bind returns parts with every setting replaced by its value, adjacent
// literals merged: the signed text's constant parts cost nothing per
// delivery.
func (p *Provider) bind(parts []part) []part {
	var out []part
	for _, q := range parts {
		if q.kind == settingRef {
			v := p.values[q.index]
			if q.lower {
				v = strings.ToLower(v)
			}
			q = part{kind: literal, text: v}
		}
		if n := len(out); q.kind == literal && n > 0 && out[n-1].kind == literal {
			out[n-1].text += q.text
			continue
		}
		out = append(out, q)
	}
	return out
}

// Name is the spec's name: the route segment and key prefix.
func (p *Provider) Name() string {
	if p.s == nil {
		return ""
	}
	return p.s.name
}

// Ack is nil for a spec without a batch or an ack (the core service's
// answer is relayed), else the answer its gateway expects, its settings
// filled in (SNAP's responseCode).
func (p *Provider) Ack() *providers.Acknowledgement {
	if p.s == nil {
		return nil
	}
	return p.ack
}

// ServicePaths reports whether the spec signs the service path a sender
// appends to its route ({{path}}): the receiver then routes
// /webhooks/<name>/<service path> to it.
func (p *Provider) ServicePaths() bool { return p.s != nil && p.s.sig.signed.has(pathRef, "") }

// EventIDFields are the body members (or form fields) `webhookd replay
// --id-suffix` rewrites (replay.id_field), or none.
func (p *Provider) EventIDFields() []string {
	if p.s == nil {
		return nil
	}
	return p.s.idFields
}

// renderSettings joins parts that bind has made literal.
func renderSettings(parts []part) string {
	var b strings.Builder
	for _, q := range parts {
		b.WriteString(q.text)
	}
	return b.String()
}

// Spec returns the spec p was built from.
func (p *Provider) Spec() *Spec { return p.s }

// fail names the provider in one of Verify's or Parse's errors as every
// Go adapter does, after the class of refusal: "delivery not
// authenticated: acme: no valid signature", so that a log line reads the
// same whichever kind of provider wrote it.
func (p *Provider) fail(err error) error {
	msg := err.Error()
	for _, class := range []error{providers.ErrUnauthorized, providers.ErrMalformed} {
		if rest, ok := strings.CutPrefix(msg, class.Error()+": "); ok {
			return &namedError{msg: class.Error() + ": " + p.s.name + ": " + rest, err: err}
		}
	}
	return fmt.Errorf("%s: %w", p.s.name, err)
}

// namedError is an error of Verify or Parse with the provider's name in
// its text; it wraps the error as it was, sentinels and all.
type namedError struct {
	msg string
	err error
}

func (e *namedError) Error() string { return e.msg }
func (e *namedError) Unwrap() error { return e.err }

// macKey computes an HMAC under one fixed key, reusing its keyed states
// across deliveries (hmac.New allocates two hash states and the padded
// key each time).
type macKey struct {
	key  []byte
	pool sync.Pool
}

type macState struct {
	mac hash.Hash
	sum [64]byte
}

func newMACKey(h func() hash.Hash, key []byte) *macKey {
	k := &macKey{key: key}
	k.pool.New = func() any { return &macState{mac: hmac.New(h, k.key)} }
	return k
}

// encodedSum writes to dst, encoded as enc, the MAC of the signed text:
// buf with the body spliced in at cut (cut < 0: buf alone), which spares
// copying a large body into the template's buffer. It returns the length
// written.
func (k *macKey) encodedSum(dst, buf []byte, cut int, body []byte, enc encoding) int {
	st := k.pool.Get().(*macState)
	defer k.pool.Put(st)
	if cut < 0 {
		st.mac.Write(buf)
	} else {
		st.mac.Write(buf[:cut])
		st.mac.Write(body)
		st.mac.Write(buf[cut:])
	}
	sum := st.mac.Sum(st.sum[:0])
	st.mac.Reset()
	return encode(dst, sum, enc)
}

// errNoSpec is a Provider's zero value at work: it verifies nothing.
var errNoSpec = errors.New("spec: zero Provider")
