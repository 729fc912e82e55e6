package spec

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Sign returns the delivery the gateway would send with body, signed with
// the first secret at the Provider's clock: `webhookd replay` and the
// tests send it. The headers and query values the signed text reads come
// from the spec's replay templates, else from its first example; the
// timestamp is always the clock's.
func (p *Provider) Sign(body []byte) (providers.Delivery, error) {
	if p.s == nil {
		return providers.Delivery{}, errNoSpec
	}
	ex := &p.s.examples[0]
	return p.sign(providers.Delivery{Header: ex.header, Query: ex.query}, body, true)
}

// Resign returns another delivery of the event first is, as the gateway
// sends it on a retry: body signed afresh at the Provider's clock, with
// first's headers, query values and signature items other than the
// timestamp. The conformance kit resends an event whose key is in a
// signed header this way (Kit.Resend).
func (p *Provider) Resign(first providers.Delivery, body []byte) (providers.Delivery, error) {
	if p.s == nil {
		return providers.Delivery{}, errNoSpec
	}
	return p.sign(first, body, false)
}

// sign signs body with the parts the signed text reads taken from src
// (and, with replay, the spec's replay templates).
func (p *Provider) sign(src providers.Delivery, body []byte, replay bool) (providers.Delivery, error) {
	s := p.s
	if p.keys != nil && p.signer == nil {
		return providers.Delivery{}, fmt.Errorf("%s: %w: only the sender holds its private key", s.name, providers.ErrCannotSign)
	}
	d := providers.Delivery{Header: http.Header{}, Body: body}
	if !replay {
		d.Path = src.Path
	}
	d.Header.Set("Content-Type", "application/json")
	if ct := src.Header.Get("Content-Type"); ct != "" {
		d.Header.Set("Content-Type", ct)
	}
	var sc scan
	if s.form {
		f, err := parseForm(body)
		if err != nil {
			return providers.Delivery{}, fmt.Errorf("%s: cannot sign: %w", s.name, err)
		}
		sc.form = f
		d.Header.Set("Content-Type", FormContentType)
	}
	if s.sig.assign != "" && s.sig.field == "" {
		// The source's named items (a timestamp, overwritten below).
		_ = p.scanHeader(providers.Delivery{Header: src.Header}, &sc)
	}
	for _, r := range s.required {
		if r.kind == headerRef {
			vals, _ := s.header(src.Header, r.text, r.aliases, false)
			d.Header[r.text] = append([]string(nil), vals...)
		} else {
			if d.Query == nil {
				d.Query = url.Values{}
			}
			d.Query[r.text] = append([]string(nil), src.Query[r.text]...)
		}
	}
	if replay {
		if err := p.replayValues(&d); err != nil {
			return providers.Delivery{}, err
		}
	}
	if ts := s.ts; ts != nil {
		now := p.clock()
		v := strconv.FormatInt(now.Unix(), 10)
		switch {
		case ts.rfc3339:
			v = now.Format(time.RFC3339)
		case ts.ms || ts.auto:
			v = strconv.FormatInt(now.UnixMilli(), 10)
		}
		switch ts.ref.kind {
		case jsonRef:
			d.Body = p.redated(body)
			body = d.Body
		case headerRef:
			d.Header.Set(ts.ref.text, v)
		case queryRef:
			d.Query.Set(ts.ref.text, v)
		default:
			sc.parts[ts.ref.index], sc.set[ts.ref.index] = v, true
		}
	}
	sig, err := p.signature(d, &sc)
	if err != nil {
		return providers.Delivery{}, err
	}
	var items []string
	if s.sig.assign != "" {
		for i, name := range s.sigParts {
			if sc.set[i] {
				items = append(items, name+s.sig.assign+sc.parts[i])
			}
		}
		sig = p.sigName + s.sig.assign + sig
	}
	sep := s.sig.separator
	if sep == "" {
		sep = ","
	}
	if s.sig.field != "" {
		d.Body = sc.form.With(body, s.sig.field, strings.Join(append(items, sig), sep))
		return d, nil
	}
	d.Header[s.sig.header] = []string{strings.Join(append(items, sig), sep)}
	return d, nil
}

// FormContentType is what a form body is sent with (body: form).
const FormContentType = "application/x-www-form-urlencoded"

// signature returns the prefixed, encoded signature of d under the first
// secret (or the first token).
func (p *Provider) signature(d providers.Delivery, sc *scan) (string, error) {
	if p.tokens != nil {
		return p.s.sig.prefix + p.tokens[0], nil
	}
	buf, cut, err := p.appendSigned(nil, d, sc)
	if err != nil {
		return "", fmt.Errorf("%s: cannot sign: the first example lacks a part the signed text reads: %w", p.s.name, err)
	}
	if p.keys != nil {
		return p.signPublic(buf, cut, d.Body)
	}
	var out [128]byte
	if p.plain != nil {
		scratch := new([]byte)
		n, err := p.plainSum(out[:], d, sc, scratch, p.plainSecrets[0])
		if err != nil {
			return "", err
		}
		return p.s.sig.prefix + string(out[:n]), nil
	}
	n := p.macs[0].encodedSum(out[:], buf, cut, d.Body, p.s.sig.enc)
	return p.s.sig.prefix + string(out[:n]), nil
}

// replayValues sets the headers and query values of the spec's replay
// templates, rendered over d's body.
func (p *Provider) replayValues(d *providers.Delivery) error {
	if len(p.s.replay) == 0 {
		return nil
	}
	var o *rawjson.Object
	if !p.s.anyBody {
		var err error
		if o, err = rawjson.Parse(d.Body); err != nil {
			return fmt.Errorf("%s: cannot sign: %w", p.s.name, ErrNotJSON)
		}
	}
	for i := range p.s.replay {
		r := &p.s.replay[i]
		v, err := p.render(&r.value, o, d.Body, *d, nil, true, nil)
		if err != nil {
			return fmt.Errorf("%s: cannot sign: replay %s: %w", p.s.name, r.name, err)
		}
		if r.header {
			d.Header.Set(r.name, v)
			continue
		}
		if d.Query == nil {
			d.Query = url.Values{}
		}
		d.Query.Set(r.name, v)
	}
	return nil
}
