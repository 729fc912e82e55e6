package spec

import (
	"errors"
	"fmt"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/webhookd/webhookd/providers/internal/form"
)

// kind is what a template part stands for.
type kind uint8

const (
	literal kind = iota
	bodyRef
	settingRef
	headerRef
	queryRef
	signatureRef
	jsonRef
	digestRef
	// pathRef is the service path the request carries after its route
	// (version 2).
	pathRef
	// formRef is a field of a form body, secretRef the secret itself
	// inside a plain digest's text (version 2).
	formRef
	secretRef
)

// kindNames are the reference prefixes, for messages.
var kindNames = [...]string{literal: "text", bodyRef: "body", settingRef: "setting", headerRef: "header",
	queryRef: "query", signatureRef: "signature", jsonRef: "json", digestRef: "digest", pathRef: "path", formRef: "form", secretRef: "secret"}

// part is one piece of a compiled template: literal text, or a reference
// resolved per delivery.
type part struct {
	kind kind
	// text is the literal, or the reference's name: a header's canonical
	// key, a query parameter, a signature item, a setting's variable.
	text string
	// path is a json reference's member names; steps, instead, a path
	// with an array index or a member named by another value (v2).
	path  []string
	steps []step
	// index is a setting's position in Spec.settings, or a signature
	// item's in Spec.sigParts.
	index int
	// lower lower-cases the value (| lower).
	lower bool
	// aliases are a header reference's other names (v2), bound at
	// compile time so that a delivery costs no lookup of them.
	aliases []string
	// compact removes the whitespace between a body's JSON tokens
	// (| compact), and sum replaces the body by its lower-case hex
	// digest (| sha256 and the others of bodyDigests): version 2.
	compact bool
	sum     *bodyDigest
}

// template is a compiled template: its parts in order.
type template struct {
	src   string
	parts []part
	// stops holds, for each part of an event key, the bytes its value
	// must not hold (empty: none), so that the key splits back into its
	// values one way (Spec.keySplits); nil for other templates.
	stops []string
}

// errTemplate is wrapped by every template error.
var errTemplate = errors.New("template")

// parseTemplate compiles src, accepting only the reference kinds allowed.
// Names are checked later, against the spec (compile.go).
func parseTemplate(src string, allowed ...kind) (template, error) {
	t := template{src: src}
	rest := src
	for rest != "" {
		open := strings.Index(rest, "{{")
		if open < 0 {
			t.parts = append(t.parts, part{kind: literal, text: rest})
			break
		}
		if open > 0 {
			t.parts = append(t.parts, part{kind: literal, text: rest[:open]})
		}
		end := strings.Index(rest[open:], "}}")
		if end < 0 {
			return t, fmt.Errorf("%w %q: {{ without }}", errTemplate, src)
		}
		p, err := parseRef(strings.TrimSpace(rest[open+2 : open+end]))
		if err != nil {
			return t, fmt.Errorf("%w %q: %v", errTemplate, src, err)
		}
		ok := false
		for _, k := range allowed {
			ok = ok || k == p.kind
		}
		if !ok {
			return t, fmt.Errorf("%w %q: %s references are not allowed here", errTemplate, src, kindNames[p.kind])
		}
		t.parts = append(t.parts, p)
		rest = rest[open+end+2:]
	}
	return t, nil
}

// parseRef reads one reference: "body", "digest", "path", "json.a.b",
// "header.Name", "query.name", "signature.t", "setting.NAME", each
// optionally followed by "| lower"; the body by "| compact" and then a
// digest ("| sha256").
func parseRef(ref string) (part, error) {
	var p part
	ref, filters, _ := strings.Cut(ref, "|")
	ref = strings.TrimSpace(ref)
	if filters != "" {
		if err := p.filter(ref, strings.Split(filters, "|")); err != nil {
			return p, err
		}
		if p.compact && p.sum == nil {
			return p, fmt.Errorf("body | compact must be followed by a digest (| sha256)")
		}
	}
	prefix, name, dotted := strings.Cut(ref, ".")
	switch {
	case ref == "body":
		p.kind = bodyRef
		return p, nil
	case ref == "path":
		p.kind = pathRef
		return p, nil
	case ref == "secret":
		p.kind = secretRef
		return p, nil
	case ref == "digest":
		p.kind = digestRef
		return p, nil
	case !dotted || name == "":
		return p, fmt.Errorf("unknown reference %q (body, digest, json.*, header.*, query.*, signature.*, setting.*)", ref)
	}
	if p.compact || p.sum != nil {
		return p, fmt.Errorf("%s: compact and digests are for the body only", ref)
	}
	p.text = name
	switch prefix {
	case "json":
		p.kind = jsonRef
		if strings.ContainsAny(name, "()") || hasIndex(name) {
			steps, err := parseSteps(name, true)
			if err != nil {
				return p, err
			}
			p.steps = steps
			return p, nil
		}
		p.path = strings.Split(name, ".")
		for _, seg := range p.path {
			if seg == "" {
				return p, fmt.Errorf("json path %q has an empty member name", name)
			}
		}
	case "header":
		p.kind = headerRef
		p.text = textproto.CanonicalMIMEHeaderKey(name)
		if strings.ContainsAny(name, " \t:") {
			return p, fmt.Errorf("%q is not a header name", name)
		}
	case "query":
		p.kind = queryRef
	case "signature":
		p.kind = signatureRef
	case "setting":
		p.kind = settingRef
	case "form":
		p.kind = formRef
		if !form.Plain(name) {
			return p, fmt.Errorf("%q is not a form field name (letters, digits, _ and -)", name)
		}
	default:
		return p, fmt.Errorf("unknown reference %q (body, digest, json.*, header.*, query.*, signature.*, setting.*)", ref)
	}
	return p, nil
}

// filter reads a reference's filters: lower for any but the body; for
// the body, compact and then at most one digest.
func (p *part) filter(ref string, filters []string) error {
	for _, f := range filters {
		f = strings.TrimSpace(f)
		switch {
		case f == "lower" && ref != "body" && !p.compact && p.sum == nil:
			p.lower = true
		case f == "compact" && ref == "body" && p.sum == nil && !p.compact:
			p.compact = true
		case ref == "body" && p.sum == nil && bodyDigests[f] != nil:
			p.sum = bodyDigests[f]
		default:
			return fmt.Errorf("filter %q cannot follow %q here (lower; for the body: compact, then sha256, sha1, sha512 or md5)", f, ref)
		}
	}
	return nil
}

// has reports whether t references k (with name, when name is not empty).
func (t template) has(k kind, name string) bool {
	for _, p := range t.parts {
		if p.kind == k && (name == "" || p.text == name) {
			return true
		}
	}
	return false
}

// refs returns the parts of t that are references.
func (t template) refs() []part {
	var out []part
	for _, p := range t.parts {
		if p.kind != literal {
			out = append(out, p)
		}
	}
	return out
}

// keyPartBounded refuses a key part that the signed text does not pin
// down: signed lower-cased but keyed as sent (ABC and abc sign alike, yet
// would be two keys), or joined to another value with no text between
// them (the signature of "ab"+"c" is also that of "a"+"bc").
func (s *Spec) keyPartBounded(k part) error {
	parts := s.sig.signed.parts
	asSent := false
	for i, q := range parts {
		if q.kind != k.kind || q.text != k.text {
			continue
		}
		asSent = asSent || !q.lower
		for _, j := range []int{i - 1, i + 1} {
			if n, ok := neighbour(parts, j, j-i); ok && n.kind != literal && n.kind != bodyRef {
				return invalid("event.key", "%s.%s is joined to %s in signature.signed with no text between them, so its value is not fixed by the signature",
					kindNames[k.kind], k.text, refName(&n))
			}
		}
	}
	if !asSent && !k.lower {
		return invalid("event.key", "%s.%s is lower-cased in signature.signed, so the key must lower it too (| lower)", kindNames[k.kind], k.text)
	}
	return nil
}

// neighbour returns the part at i, stepping by step over settings (whose
// value may be empty, so they separate nothing).
func neighbour(parts []part, i, step int) (part, bool) {
	for ; i >= 0 && i < len(parts); i += step {
		if parts[i].kind != settingRef {
			return parts[i], true
		}
	}
	return part{}, false
}

// step is one step of a json path that a list of member names cannot say
// (version 2): a member by name, the element of the array the step before
// named (index, 0 first), or the member named by the string at another
// path of the same object (from: Razorpay keys on
// payload.(contains.0).entity.id, the entity its contains list names
// first).
type step struct {
	name  string
	index int // -1 unless an element
	from  []step
}

// maxIndex bounds an array index in a path.
const maxIndex = 999

// hasIndex reports whether a dotted path has a segment of digits only.
func hasIndex(name string) bool {
	for _, seg := range strings.Split(name, ".") {
		if seg != "" && strings.Trim(seg, "0123456789") == "" {
			return true
		}
	}
	return false
}

// parseSteps reads a json path with indexes ("contains.0") and, when
// nested is true, members named by another path in parentheses
// ("payload.(contains.0).entity.id"), which may not nest.
func parseSteps(name string, nested bool) ([]step, error) {
	var steps []step
	for rest := name; ; {
		var seg string
		if strings.HasPrefix(rest, "(") {
			end := strings.Index(rest, ")")
			if !nested || end < 0 {
				return nil, fmt.Errorf("json path %q: a member named by a value is one path in parentheses, not nested", name)
			}
			from, err := parseSteps(rest[1:end], false)
			if err != nil {
				return nil, err
			}
			steps = append(steps, step{index: -1, from: from})
			rest = rest[end+1:]
			if rest == "" {
				return steps, nil
			}
			if !strings.HasPrefix(rest, ".") {
				return nil, fmt.Errorf("json path %q: a parenthesis ends a step", name)
			}
			rest = rest[1:]
			continue
		}
		seg, rest, _ = strings.Cut(rest, ".")
		switch {
		case seg == "" || strings.ContainsAny(seg, "()"):
			return nil, fmt.Errorf("json path %q has an empty or unbalanced member name", name)
		case strings.Trim(seg, "0123456789") == "":
			n, err := strconv.Atoi(seg)
			if err != nil || n > maxIndex || len(steps) == 0 || steps[len(steps)-1].index >= 0 {
				return nil, fmt.Errorf("json path %q: an index (0 to %d) follows a member name", name, maxIndex)
			}
			steps = append(steps, step{index: n})
		default:
			steps = append(steps, step{name: seg, index: -1})
		}
		if rest == "" {
			if strings.HasSuffix(name, ".") {
				return nil, fmt.Errorf("json path %q has an empty member name", name)
			}
			return steps, nil
		}
	}
}
