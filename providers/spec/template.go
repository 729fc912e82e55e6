package spec

import (
	"errors"
	"fmt"
	"net/textproto"
	"strings"
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
)

// kindNames are the reference prefixes, for messages.
var kindNames = [...]string{literal: "text", bodyRef: "body", settingRef: "setting", headerRef: "header",
	queryRef: "query", signatureRef: "signature", jsonRef: "json", digestRef: "digest"}

// part is one piece of a compiled template: literal text, or a reference
// resolved per delivery.
type part struct {
	kind kind
	// text is the literal, or the reference's name: a header's canonical
	// key, a query parameter, a signature item, a setting's variable.
	text string
	// path is a json reference's member names.
	path []string
	// index is a setting's position in Spec.settings, or a signature
	// item's in Spec.sigParts.
	index int
	// lower lower-cases the value (| lower).
	lower bool
}

// template is a compiled template: its parts in order.
type template struct {
	src   string
	parts []part
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

// parseRef reads one reference: "body", "digest", "json.a.b",
// "header.Name", "query.name", "signature.t", "setting.NAME", each
// optionally followed by "| lower".
func parseRef(ref string) (part, error) {
	var p part
	if r, filter, ok := strings.Cut(ref, "|"); ok {
		if strings.TrimSpace(filter) != "lower" {
			return p, fmt.Errorf("unknown filter %q (lower)", strings.TrimSpace(filter))
		}
		p.lower = true
		ref = strings.TrimSpace(r)
	}
	prefix, name, dotted := strings.Cut(ref, ".")
	switch {
	case ref == "body":
		p.kind = bodyRef
		return p, nil
	case ref == "digest":
		p.kind = digestRef
		return p, nil
	case !dotted || name == "":
		return p, fmt.Errorf("unknown reference %q (body, digest, json.*, header.*, query.*, signature.*, setting.*)", ref)
	}
	p.text = name
	switch prefix {
	case "json":
		p.kind = jsonRef
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
	default:
		return p, fmt.Errorf("unknown reference %q (body, digest, json.*, header.*, query.*, signature.*, setting.*)", ref)
	}
	return p, nil
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
