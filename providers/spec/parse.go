package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Parse's errors. Each wraps providers.ErrMalformed; the Provider adds its
// name and, for a key or type, which reference failed (never a value).
var (
	// ErrNotJSON means the body is not one JSON object whose member
	// names are unique, also under case folding, at any depth.
	ErrNotJSON = fmt.Errorf("%w: body is not a JSON object with unique member names", providers.ErrMalformed)
	// ErrNoEventKey means a part of the event key is missing, empty, not
	// a string or number, or not a token (MaxTokenBytes of printable
	// ASCII without spaces), or the key is longer than MaxKeyBytes.
	ErrNoEventKey = fmt.Errorf("%w: no usable event key", providers.ErrNoEventKey)
	// ErrInvalidType means a part of the event type is present but not a
	// token.
	ErrInvalidType = fmt.Errorf("%w: invalid event type", providers.ErrNoEventKey)
	// ErrBatch means the batch member is missing, not an array of
	// objects, empty, or longer than MaxBatch.
	ErrBatch = fmt.Errorf("%w: batch is not an array of 1 to %d objects", providers.ErrMalformed, MaxBatch)
)

// Limits on what Parse derives.
const (
	// MaxTokenBytes is the longest value one reference of a key or type
	// may have.
	MaxTokenBytes = 255
	// MaxKeyBytes is the longest event key: with the provider's name it
	// stays within the store's key limit (dedupe.MaxKeyLen).
	MaxKeyBytes = 400
	// MaxBatch is the most events one batch may carry.
	MaxBatch = 1000
)

// Parse derives a verified delivery's events: one, whose body is the
// delivery's, or one per element of the batch member. Its errors wrap
// providers.ErrMalformed.
func (p *Provider) Parse(d providers.Delivery) ([]providers.Item, error) {
	if p.s == nil {
		return nil, fmt.Errorf("%w: %v", providers.ErrMalformed, errNoSpec)
	}
	if p.s.form {
		return p.parseFormEvent(d)
	}
	if p.s.anyBody {
		return p.parseAnyEvent(d)
	}
	o, err := rawjson.Parse(d.Body)
	if err != nil {
		return nil, p.fail(ErrNotJSON)
	}
	if p.s.keyReadsParts {
		if err := p.oneReading(d); err != nil {
			return nil, p.fail(err)
		}
	}
	if p.s.batch == "" {
		ev, err := p.event(o, d.Body, d)
		if err != nil {
			return nil, err
		}
		return []providers.Item{{Event: ev, Body: d.Body}}, nil
	}
	return p.parseBatch(o, d)
}

// parseBatch is Parse for a spec with a batch member: one event per
// element. It is a function of its own because its loop ranges over an
// iterator, whose body returning moves the results of the function that
// holds it to the heap: two allocations on every delivery of every JSON
// spec, batch or not, while the loop was in Parse.
func (p *Provider) parseBatch(o *rawjson.Object, d providers.Delivery) ([]providers.Item, error) {
	elems, ok, err := o.Elements(p.s.batch)
	if err != nil || !ok {
		return nil, p.fail(ErrBatch)
	}
	var items []providers.Item
	for _, m := range elems {
		if len(items) == MaxBatch {
			return nil, p.fail(ErrBatch)
		}
		eo, err := m.Object()
		if err != nil {
			return nil, p.fail(ErrBatch)
		}
		ev, err := p.event(eo, m.Value, d)
		if err != nil {
			return nil, fmt.Errorf("%w (%s element %d)", err, p.s.batch, len(items))
		}
		body := []byte(m.Value)
		if p.s.wrap {
			body = make([]byte, 0, len(p.s.batch)+len(m.Value)+8)
			body = append(append(append(body, `{"`...), p.s.batch...), `":[`...)
			body = append(append(body, m.Value...), "]}"...)
		}
		items = append(items, providers.Item{Event: ev, Body: body})
	}
	if len(items) == 0 {
		return nil, p.fail(ErrBatch)
	}
	return items, nil
}

// oneReading refuses a delivery whose signed text could be split into
// its values another way: each value must hold no byte that starts the
// text after it, so the first such byte ends it. Otherwise a genuine
// "id:a;x;rid:b" (id "a;x") also verifies as id "a", rid "x;rid:b": one
// signature, two keys (docs/contract.md, "Event keys").
func (p *Provider) oneReading(d providers.Delivery) error {
	var sc scan
	if p.s.sig.assign != "" {
		if p.scanHeader(d, &sc) != nil {
			return fmt.Errorf("%w (signature header unreadable)", ErrNoEventKey)
		}
	}
	for i := range p.signed {
		r := &p.signed[i]
		if r.kind == literal || r.kind == bodyRef {
			continue
		}
		j := i + 1
		for j < len(p.signed) && p.signed[j].kind != bodyRef && (p.signed[j].kind != literal || p.signed[j].text == "") {
			j++
		}
		if j == len(p.signed) || p.signed[j].kind == bodyRef {
			continue // ends the text, or meets the body: a JSON object ends itself
		}
		v, err := p.value(r, d, &sc)
		if err != nil {
			return fmt.Errorf("%w (%s is missing or repeated)", ErrNoEventKey, refName(r))
		}
		if r.lower {
			v = string(appendLower(nil, v))
		}
		if strings.IndexByte(v, p.signed[j].text[0]) >= 0 {
			return fmt.Errorf("%w (%s holds %q, which starts the signed text after it)", ErrNoEventKey, refName(r), p.signed[j].text[:1])
		}
	}
	return nil
}

// event derives one event from its object o, whose text is body.
func (p *Provider) event(o *rawjson.Object, body []byte, d providers.Delivery) (providers.Event, error) {
	var sc *scan
	if len(p.s.sigParts) > 0 && (p.s.key.has(signatureRef, "") || p.s.typ.has(signatureRef, "")) {
		sc = new(scan)
		if err := p.scanHeader(d, sc); err != nil {
			return providers.Event{}, p.fail(err)
		}
	}
	// The nested objects a case reads (data), framed once for its
	// when, key and fingerprint.
	var fr frames
	ev, c, err := p.eventCase(o, body, d, sc, &fr)
	if err != nil {
		return ev, err
	}
	var fp string
	if c != nil && c.fingerprint != nil {
		fp, err = caseFingerprint(o, c.fingerprint, &fr)
	} else {
		fp, err = p.fingerprint(o)
	}
	if err != nil {
		return providers.Event{}, p.fail(ErrNotJSON)
	}
	ev.Fingerprint = fp
	return ev, nil
}

// eventOf renders the key and type of one event: of a JSON object o, or
// of the form in sc.
func (p *Provider) eventOf(o *rawjson.Object, body []byte, d providers.Delivery, sc *scan) (providers.Event, error) {
	ev, _, err := p.eventCase(o, body, d, sc, nil)
	return ev, err
}

// eventCase is eventOf, with the case of event.cases that gave the event
// (nil without cases). A case applies when its when holds; the first that
// applies and whose key's references are all present gives the key and
// type, and a final one that applies gives them or refuses the delivery.
func (p *Provider) eventCase(o *rawjson.Object, body []byte, d providers.Delivery, sc *scan, fr *frames) (providers.Event, *eventCase, error) {
	keyT, typT := &p.s.key, &p.s.typ
	var key string
	var err error
	var c *eventCase
	if len(p.s.cases) == 0 {
		key, err = p.render(keyT, o, body, d, sc, true, fr)
	} else {
		err = errNoCase
		applied := false // the previous case's when and match held
		for i := range p.s.cases {
			c = &p.s.cases[i]
			if o != nil && (c.when != nil || c.match != nil) && !(c.sameGuard && applied) {
				ok, werr := c.applies(o, fr)
				if werr == nil && ok {
					werr = c.matches(o, fr)
				}
				if werr != nil {
					return providers.Event{}, nil, p.fail(fmt.Errorf("%w (%v)", ErrNoEventKey, werr))
				}
				if applied = ok; !ok {
					continue
				}
			}
			keyT, typT = &c.key, &c.typ
			key, err = p.render(keyT, o, body, d, sc, true, fr)
			if _, missing := err.(missingRef); !missing || c.final {
				break
			}
		}
	}
	if err != nil {
		return providers.Event{}, nil, p.fail(fmt.Errorf("%w (%v)", ErrNoEventKey, err))
	}
	if len(key) > MaxKeyBytes {
		return providers.Event{}, nil, p.fail(fmt.Errorf("%w (longer than %d bytes)", ErrNoEventKey, MaxKeyBytes))
	}
	typ, err := p.render(typT, o, body, d, sc, false, fr)
	if err != nil {
		return providers.Event{}, nil, p.fail(fmt.Errorf("%w (%v)", ErrInvalidType, err))
	}
	return providers.Event{Key: key, Type: typ}, c, nil
}

// render evaluates a key or type template. Strict (a key), every
// reference must have a value; otherwise a missing one makes the whole
// result empty. Every value must be a token, and a key's value must not
// hold the byte that ends it (keySplits). Its errors name the reference,
// never a value.
func (p *Provider) render(t *template, o *rawjson.Object, body []byte, d providers.Delivery, sc *scan, strict bool, fr *frames) (string, error) {
	if len(t.parts) == 0 {
		return "", nil
	}
	var b strings.Builder
	if len(t.parts) > 1 {
		b.Grow(64)
	}
	for i := range t.parts {
		r := &t.parts[i]
		v, ok, err := p.refValue(r, o, body, d, sc, fr)
		switch {
		case err != nil:
			return "", fmt.Errorf("%s: %v", refName(r), err)
		case (!ok || v == "" && r.kind != literal) && strict:
			// An empty value is no value: the next of event.cases is
			// tried, as for an absent one.
			return "", missingRef{r}
		case !ok, v == "" && !strict:
			// An empty type is no type, as the Go adapters read one
			// ("type":"" is accepted, with no type): the same verdict
			// on the same body after a provider became a spec.
			return "", nil
		case r.kind != literal && !providers.IsToken(v, MaxTokenBytes):
			return "", fmt.Errorf("%s is not 1 to %d bytes of printable ASCII without spaces", refName(r), MaxTokenBytes)
		}
		if r.lower {
			v = strings.ToLower(v)
		}
		if t.stops != nil && t.stops[i] != "" && strings.ContainsAny(v, t.stops[i]) {
			// Another delivery's values would make the same key (keySplits).
			return "", fmt.Errorf("%s holds one of %q, which separate the key's values", refName(r), t.stops[i])
		}
		if len(t.parts) == 1 {
			return v, nil // the usual key, one id: no copy
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// refValue is one part's value for a delivery whose (element) object is o
// and text body.
func (p *Provider) refValue(r *part, o *rawjson.Object, body []byte, d providers.Delivery, sc *scan, fr *frames) (string, bool, error) {
	switch r.kind {
	case literal:
		return r.text, true, nil
	case jsonRef:
		switch {
		case o == nil:
			return "", false, nil // a body: any body that is not a JSON object
		case r.steps != nil:
			return lookupSteps(o, r.steps)
		}
		return fr.lookup(o, r.path)
	case formRef:
		v, _ := sc.form.get(r.text)
		return v, v != "", nil
	case digestRef:
		return rawjson.HexSum(body), true, nil
	case settingRef:
		return p.values[r.index], p.values[r.index] != "", nil
	case signatureRef:
		if sc == nil || !sc.set[r.index] {
			return "", false, nil
		}
		return sc.parts[r.index], sc.parts[r.index] != "", nil
	case headerRef, queryRef:
		vals := d.Query[r.text]
		if r.kind == headerRef {
			var err error
			if vals, err = p.s.header(d.Header, r.text, r.aliases, false); err != nil {
				return "", false, errors.New("sent twice, or under two names with different values")
			}
		}
		switch {
		case len(vals) > 1:
			return "", false, fmt.Errorf("given %d times", len(vals))
		case len(vals) == 0 || vals[0] == "":
			return "", false, nil
		}
		return vals[0], true, nil
	}
	return "", false, nil
}

// missingRef is render's error for a reference without a value: the
// next of event.cases is then tried.
// It holds the reference, not its name, so that a case that does not
// apply costs no allocation.
type missingRef struct{ r *part }

func (m missingRef) Error() string {
	if m.r.kind == literal {
		return m.r.text + " is missing"
	}
	return refName(m.r) + " is missing"
}

// errNoCase is eventCase's error when no case applies.
var errNoCase error = missingRef{&part{kind: literal, text: "every case's key"}}

// refName names a reference in messages: "json.data.id".
func refName(r *part) string {
	if r.kind == digestRef || r.kind == bodyRef || r.kind == pathRef || r.kind == secretRef {
		return kindNames[r.kind]
	}
	return kindNames[r.kind] + "." + r.text
}

// frames keeps the top-level members of one event's object that were
// framed as objects, so that the cases, key and fingerprint that read
// data.* frame data once; a nil *frames keeps nothing.
type frames struct {
	names [2]string
	objs  [2]*rawjson.Object
	n     int
	// seen are top-level members whose presence a case's when read, so
	// that the cases that share one (Xendit's event) look it up once: a
	// miss costs a scan of every member for a variant spelling.
	seen    [8]string
	present [8]bool
	ns      int
	// read are top-level members a case's match, key or type read, with
	// their values: the cases read event again and again.
	read  [4]string
	value [4]string
	found [4]bool
	nr    int
}

// has reports whether o's top-level member name is present (neither
// null nor an empty string), from f when a case asked before.
func (f *frames) has(o *rawjson.Object, name string) (bool, error) {
	if f != nil {
		for i := range f.ns {
			if f.seen[i] == name {
				return f.present[i], nil
			}
		}
	}
	m, ok, err := o.Get(name)
	if err != nil {
		return false, err
	}
	ok = ok && !m.IsNull() && string(m.Value) != `""`
	if f != nil && f.ns < len(f.seen) {
		f.seen[f.ns], f.present[f.ns] = name, ok
		f.ns++
	}
	return ok, nil
}

// object is o.Object(name), from f when o's member name was framed before
// (o is the event's object: f belongs to one).
func (f *frames) object(o *rawjson.Object, name string) (*rawjson.Object, bool, error) {
	if f != nil {
		for i := range f.n {
			if f.names[i] == name {
				return f.objs[i], true, nil
			}
		}
	}
	obj, ok, err := o.Object(name)
	if f != nil && ok && err == nil && f.n < len(f.names) {
		f.names[f.n], f.objs[f.n] = name, obj
		f.n++
	}
	return obj, ok, err
}

// lookup is the package's lookup, its first step framed through f, and
// a top-level member's value kept in f.
func (f *frames) lookup(o *rawjson.Object, path []string) (string, bool, error) {
	if len(path) == 1 && f != nil {
		for i := range f.nr {
			if f.read[i] == path[0] {
				return f.value[i], f.found[i], nil
			}
		}
		v, ok, err := lookup(o, path)
		if err == nil && f.nr < len(f.read) {
			f.read[f.nr], f.value[f.nr], f.found[f.nr] = path[0], v, ok
			f.nr++
		}
		return v, ok, err
	}
	if len(path) < 2 {
		return lookup(o, path)
	}
	next, ok, err := f.object(o, path[0])
	if err != nil || !ok {
		return "", false, err
	}
	return lookup(next, path[1:])
}

// lookup returns the string (decoded), number or boolean (as sent) at
// path in o; ok is false when a member on the way is absent or null.
func lookup(o *rawjson.Object, path []string) (string, bool, error) {
	last := len(path) - 1
	for _, name := range path[:last] {
		next, ok, err := o.Object(name)
		if err != nil || !ok {
			return "", false, err
		}
		o = next
	}
	m, ok, err := o.Get(path[last])
	if err != nil || !ok || m.IsNull() {
		return "", false, err
	}
	switch c := m.Value[0]; {
	case c == '"':
		return o.String(path[last])
	case c == '{' || c == '[':
		return "", false, fmt.Errorf("not a string, number or boolean")
	}
	return string(m.Value), true, nil
}

// fingerprint hashes the spec's fingerprint members of o: in canonical
// form (rawjson's Fingerprint), or compacted in the order listed, as
// {"name":value,...} without the absent ones (the encoding of the Go
// Stripe adapter, so that a spec can take over its stored fingerprints).
func (p *Provider) fingerprint(o *rawjson.Object) (string, error) {
	if !p.s.compact {
		return o.Fingerprint(p.s.fingerprint...)
	}
	// Looked up first, so that the buffer grows once.
	var found [16]rawjson.Member
	members := found[:0]
	size := 2
	for _, name := range p.s.fingerprint {
		m, ok, err := o.Get(name)
		if err != nil {
			return "", err
		}
		members = append(members, m) // the zero Member for an absent one
		if ok {
			size += len(name) + len(m.Value) + 4
		}
	}
	return rawjson.HexSumOf(func(buf *bytes.Buffer) error {
		buf.Grow(size)
		buf.WriteByte('{')
		for i, name := range p.s.fingerprint {
			if members[i].Value == nil {
				continue
			}
			if buf.Len() > 1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('"')
			buf.WriteString(name)
			buf.WriteString(`":`)
			members[i].AppendCompact(buf)
		}
		buf.WriteByte('}')
		return nil
	})
}

// lookupSteps is lookup for a path of steps (an array index, a member
// named by another value): a member named by a value that is absent takes
// the path's value with it; one that is not a token names nothing (an
// error, as for a member that is not an object on the way).
func lookupSteps(o *rawjson.Object, steps []step) (string, bool, error) {
	cur := o
	var m rawjson.Member
	for i := 0; i < len(steps); i++ {
		name := steps[i].name
		if from := steps[i].from; from != nil {
			v, ok, err := lookupSteps(o, from)
			switch {
			case err != nil || !ok:
				return "", false, err
			case !providers.IsToken(v, MaxTokenBytes):
				return "", false, fmt.Errorf("the value naming a member is not a token")
			}
			name = v
		}
		if cur == nil {
			return "", false, fmt.Errorf("not an object")
		}
		var ok bool
		var err error
		if i+1 < len(steps) && steps[i+1].index >= 0 {
			m, ok, err = element(cur, name, steps[i+1].index)
			i++
		} else {
			m, ok, err = cur.Get(name)
		}
		if err != nil || !ok || m.IsNull() {
			return "", false, err
		}
		cur = nil
		if i+1 < len(steps) {
			if m.Value[0] != '{' {
				return "", false, fmt.Errorf("not an object")
			}
			if cur, err = m.Object(); err != nil {
				return "", false, err
			}
		}
	}
	return scalar(m)
}

// element returns element index of the array member name of o; ok is
// false when the member is absent or null, or the array shorter.
func element(o *rawjson.Object, name string, index int) (rawjson.Member, bool, error) {
	elems, ok, err := o.Elements(name)
	if err != nil || !ok {
		return rawjson.Member{}, false, err
	}
	for i, e := range elems {
		if i == index {
			return e, true, nil
		}
	}
	return rawjson.Member{}, false, nil
}

// scalar is a member's value as lookup reads one: a string decoded, a
// number or boolean as sent, null absent.
func scalar(m rawjson.Member) (string, bool, error) {
	switch c := m.Value[0]; {
	case c == 'n':
		return "", false, nil
	case c == '{' || c == '[':
		return "", false, fmt.Errorf("not a string, number or boolean")
	case c != '"':
		return string(m.Value), true, nil
	}
	var s string
	if err := json.Unmarshal(m.Value, &s); err != nil {
		return "", false, fmt.Errorf("not a string")
	}
	return s, true, nil
}
