package spec

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// scan is what Verify reads from the signature header: the candidate
// signatures and the named items the templates read. It lives on the
// stack: its strings are slices of the header's values.
type scan struct {
	sigs  [MaxSignatures]string
	n     int
	parts [maxSigParts]string
	set   [maxSigParts]bool
	// form is a form body's fields (body: form); secret is the one a
	// plain digest's text holds while it is computed.
	form   formFields
	secret string
}

// Verify authenticates a delivery: the signature header (or form field)
// is read as the spec says, the timestamp (if any) checked against the
// tolerance or the retention before any MAC, and some signature must be
// the MAC, digest or public-key signature of the signed text under some
// secret or key (or, for a token, equal some secret). Its errors wrap
// providers.ErrUnauthorized, but for a form body that does not read one
// way (ErrNotForm, which wraps providers.ErrMalformed: 400).
func (p *Provider) Verify(_ context.Context, d providers.Delivery) error {
	if p.s == nil {
		return fmt.Errorf("%w: %v", providers.ErrUnauthorized, errNoSpec)
	}
	var sc scan
	if p.s.form {
		f, err := parseForm(d.Body)
		if err != nil {
			return p.fail(err)
		}
		sc.form = f
	}
	if err := p.scanHeader(d, &sc); err != nil {
		return p.fail(err)
	}
	if p.s.ts != nil && p.s.ts.ref.kind != jsonRef {
		if err := p.checkTimestamp(d, &sc); err != nil {
			return p.fail(err)
		}
	}
	if sc.n == 0 {
		return p.fail(ErrNoValidSignature)
	}
	if p.tokens != nil {
		for _, tok := range p.tokens {
			for _, got := range sc.sigs[:sc.n] {
				if signature.EqualString(tok, got) {
					return nil
				}
			}
		}
		return p.fail(ErrNoValidSignature)
	}
	if p.keys != nil {
		if err := p.verifyPublic(d, &sc); err != nil {
			return err
		}
	} else {
		ok, err := p.match(d, &sc)
		switch {
		case err != nil:
			return p.fail(err)
		case !ok:
			return p.fail(ErrNoValidSignature)
		}
	}
	if p.s.ts != nil && p.s.ts.ref.kind == jsonRef {
		// Read from the body, so only once it is the gateway's.
		if err := p.checkBodyTime(d); err != nil {
			return p.fail(err)
		}
	}
	return nil
}

// scanHeader reads the signature header's values into sc.
func (p *Provider) scanHeader(d providers.Delivery, sc *scan) error {
	sig := &p.s.sig
	vals, err := p.s.header(d.Header, sig.header, sig.aliases, sig.repeated)
	if err != nil {
		return err
	}
	if sig.field != "" {
		vals = nil
		if v, _ := sc.form.get(sig.field); v != "" {
			vals = []string{v}
		}
	}
	size := 0
	for _, v := range vals {
		size += len(v)
	}
	switch {
	case size == 0:
		return ErrNotSigned
	case len(vals) > 1 && !sig.repeated:
		return fmt.Errorf("%w (sent %d times)", ErrInvalidHeader, len(vals))
	case size > MaxHeaderBytes:
		return fmt.Errorf("%w (longer than %d bytes)", ErrInvalidHeader, MaxHeaderBytes)
	}
	for _, v := range vals {
		for v != "" {
			item := v
			if sig.separator != "" {
				item, v, _ = strings.Cut(v, sig.separator)
			} else {
				v = ""
			}
			if err := p.scanItem(strings.Trim(item, " \t"), sc); err != nil {
				return err
			}
		}
	}
	return nil
}

// scanItem files one item of the signature header.
func (p *Provider) scanItem(item string, sc *scan) error {
	sig := &p.s.sig
	if sig.assign != "" {
		name, value, ok := strings.Cut(item, sig.assign)
		if !ok {
			return nil // not name=value: ignored, as the SDKs ignore unknown items
		}
		if name != p.sigName {
			for i, want := range p.s.sigParts {
				if name == want {
					if sc.set[i] {
						return fmt.Errorf("%w (%s given twice)", ErrInvalidHeader, want)
					}
					sc.parts[i], sc.set[i] = value, true
				}
			}
			return nil
		}
		item = value
	}
	got, ok := strings.CutPrefix(item, sig.prefix)
	if !ok && sig.prefixOptional {
		got, ok = item, true
	}
	if ok && got != "" && sc.n < MaxSignatures {
		sc.sigs[sc.n] = got
		sc.n++
	}
	return nil
}

// value returns the delivery's value for a header, query or signature
// reference, or ErrMissingPart when it is missing, empty or repeated.
func (p *Provider) value(r *part, d providers.Delivery, sc *scan) (string, error) {
	var vals []string
	switch r.kind {
	case headerRef:
		var err error
		if vals, err = p.s.header(d.Header, r.text, r.aliases, false); err != nil {
			return "", err
		}
	case queryRef:
		vals = d.Query[r.text]
	case signatureRef:
		if !sc.set[r.index] || sc.parts[r.index] == "" {
			return "", fmt.Errorf("%w (signature item %s)", ErrMissingPart, r.text)
		}
		return sc.parts[r.index], nil
	case pathRef:
		// Empty for a request to the route itself: a sender that appends
		// nothing signs nothing after the notification path.
		return d.Path, nil
	case formRef:
		// An absent field signs as empty, as PayU's unused udf fields do.
		v, _ := sc.form.get(r.text)
		return v, nil
	case secretRef:
		return sc.secret, nil
	}
	if len(vals) != 1 || vals[0] == "" {
		return "", fmt.Errorf("%w (%s %s)", ErrMissingPart, kindNames[r.kind], r.text)
	}
	return vals[0], nil
}

// maxTimestampDigits keeps a timestamp within int64 milliseconds.
const maxTimestampDigits = 18

func (p *Provider) checkTimestamp(d providers.Delivery, sc *scan) error {
	ts := p.s.ts
	v, err := p.value(&ts.ref, d, sc)
	if err != nil {
		return err
	}
	if ts.rfc3339 {
		return p.checkRFC3339(v)
	}
	return p.checkTime(v)
}

// checkTime checks a Unix timestamp's text: plain digits, within the
// tolerance and the retention.
func (p *Provider) checkTime(v string) error {
	ts := p.s.ts
	if len(v) > maxTimestampDigits {
		return ErrInvalidTimestamp
	}
	var n int64
	for i := range len(v) {
		c := v[i]
		if c < '0' || c > '9' {
			return ErrInvalidTimestamp
		}
		n = n*10 + int64(c-'0')
	}
	t := time.Unix(n, 0)
	if ts.ms || (ts.auto && len(v) >= 12) {
		t = time.UnixMilli(n)
	}
	if ts.tolerance < 0 {
		return p.withinRetention(t)
	}
	// t.Sub(now), not -age: Sub saturates, and the negation of a
	// saturated age (a timestamp centuries ahead) is still negative.
	now := p.clock()
	age := now.Sub(t)
	switch {
	case p.tolerance > 0 && age > p.tolerance:
		return ErrTooOld
	case p.retention > 0 && age > p.retention:
		return ErrExpired
	case ts.both && t.Sub(now) > p.tolerance:
		return ErrTooNew
	}
	return nil
}

// match reports whether some candidate signature is the MAC of the
// signed text under some key. Every key's MAC is compared with every
// candidate: the cost is bounded by the number of secrets and
// MaxSignatures, never by which one matched.
func (p *Provider) match(d providers.Delivery, sc *scan) (bool, error) {
	bp, _ := p.scratch.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer p.scratch.Put(bp)
	buf, cut, err := p.appendSigned((*bp)[:0], d, sc)
	*bp = buf[:0]
	if err != nil {
		return false, err
	}
	enc := p.s.sig.enc
	var want [128]byte
	if p.plain != nil {
		return p.matchPlain(d, sc, bp)
	}
	for _, k := range p.macs {
		n := k.encodedSum(want[:], buf, cut, d.Body, enc)
		for _, got := range sc.sigs[:sc.n] {
			if equalSig(want[:n], got, enc) {
				return true, nil
			}
		}
	}
	return false, nil
}

// appendSigned appends the signed text's parts other than the body to
// buf, and returns where the body goes in it (-1: the body is not
// signed).
func (p *Provider) appendSigned(buf []byte, d providers.Delivery, sc *scan) (out []byte, cut int, err error) {
	cut = -1
	for i := range p.signed {
		r := &p.signed[i]
		switch r.kind {
		case literal:
			buf = append(buf, r.text...)
		case bodyRef:
			if r.sum != nil {
				buf = appendBodyDigest(buf, r, d.Body)
				continue
			}
			cut = len(buf)
		default:
			v, err := p.value(r, d, sc)
			if err != nil {
				return buf, 0, err
			}
			if r.lower {
				buf = appendLower(buf, v)
			} else {
				buf = append(buf, v...)
			}
		}
	}
	return buf, cut, nil
}

// appendLower appends s with ASCII upper-case letters lowered.
func appendLower(buf []byte, s string) []byte {
	for i := range len(s) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf = append(buf, c)
	}
	return buf
}

// encode writes sum as the spec's encoding into dst and returns its
// length: the received signature is compared in its own encoding, so it
// is never decoded (nor allocated).
func encode(dst, sum []byte, enc encoding) int {
	switch enc {
	case hexEncoding:
		return hex.Encode(dst, sum)
	case base64Encoding:
		base64.StdEncoding.Encode(dst, sum)
		return base64.StdEncoding.EncodedLen(len(sum))
	default:
		base64.RawURLEncoding.Encode(dst, sum)
		return base64.RawURLEncoding.EncodedLen(len(sum))
	}
}

// equalSig compares an expected encoded MAC with a received one in time
// that depends only on their lengths: hex is compared in either case,
// base64url with or without padding.
func equalSig(want []byte, got string, enc encoding) bool {
	if enc == base64URLEncoding {
		got = strings.TrimRight(got, "=")
	}
	if len(want) != len(got) {
		return false
	}
	var diff byte
	for i := range len(want) {
		c := got[i]
		if enc == hexEncoding && 'A' <= c && c <= 'F' {
			c += 'a' - 'A'
		}
		diff |= want[i] ^ c
	}
	return diff == 0
}
