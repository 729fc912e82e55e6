package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// file is a spec file as written (docs/provider-specs.md). Every field is
// decoded strictly: a field it does not list is an error, never ignored.
type file struct {
	// Version is 1 when absent; 2 adds the header object, public keys,
	// body digests, RFC 3339 timestamps and single-event acknowledgements
	// (docs/provider-specs.md, "Version 2").
	Version int    `yaml:"version"`
	Name    string `yaml:"name"`
	Docs    string `yaml:"docs"`
	// Body is json (the default), form or any (v2).
	Body     string         `yaml:"body"`
	Secrets  secretsField   `yaml:"secrets"`
	Settings []settingField `yaml:"settings"`
	// Headers are the headers templates read that a sender may send
	// under other names too (v2).
	Headers   []headerAlias   `yaml:"headers"`
	Signature signatureField  `yaml:"signature"`
	Timestamp *timestampField `yaml:"timestamp"`
	Event     eventField      `yaml:"event"`
	Ack       *ackField       `yaml:"ack"`
	Replay    replayField     `yaml:"replay"`
	Examples  []exampleField  `yaml:"examples"`
}

// headerAlias is a header read under its name or any of its aliases
// (Standard Webhooks' webhook-id, which Svix sends as svix-id).
type headerAlias struct {
	Name    string   `yaml:"name"`
	Aliases []string `yaml:"aliases"`
}

type secretsField struct {
	Variable   string `yaml:"variable"`
	Noun       string `yaml:"noun"`
	Help       string `yaml:"help"`
	Encoding   string `yaml:"encoding"`
	TrimPrefix string `yaml:"trim_prefix"`
	// TokenDigest, with a token (v2): the token is the lowercase hex of
	// this digest of each secret (PhonePe's SHA-256 of username:password).
	TokenDigest string `yaml:"token_digest"`
}

type settingField struct {
	Variable string `yaml:"variable"`
	Type     string `yaml:"type"`
	Default  string `yaml:"default"`
	Required bool   `yaml:"required"`
	Help     string `yaml:"help"`
	// Pattern, a regular expression the whole value must match (v2).
	Pattern string `yaml:"pattern"`
	// Choices, the values allowed (v2), each with what templates read
	// for it: PayMongo's MODE live reads as li.
	Choices map[string]string `yaml:"choices"`
	// LongerThan is the bound a duration set (not left unset or 0) must
	// exceed (v2).
	LongerThan *longerThanField `yaml:"longer_than"`
}

// longerThanField is a duration setting's lower bound, and what it is in
// the error's words: Razorpay's MAX_AGE must outlast "Razorpay's 24h of
// retries".
type longerThanField struct {
	Duration string `yaml:"duration"`
	What     string `yaml:"what"`
}

type signatureField struct {
	// Header is the header's name (v1) or its grammar (v2).
	Header    headerField `yaml:"header"`
	Repeated  bool        `yaml:"repeated"`
	Separator string      `yaml:"separator"`
	Assign    string      `yaml:"assign"`
	Name      string      `yaml:"name"`
	Prefix    string      `yaml:"prefix"`
	// PrefixOptional accepts a signature without Prefix too.
	PrefixOptional bool   `yaml:"prefix_optional"`
	Algorithm      string `yaml:"algorithm"`
	Encoding       string `yaml:"encoding"`
	Signed         string `yaml:"signed"`
	// Field, instead of Header (v2, form bodies): the form field that
	// carries the signature.
	Field string `yaml:"field"`
	// Joined lists the form fields that must not hold the separator the
	// signed text joins them with (v2).
	Joined *joinedField `yaml:"joined"`
}

type joinedField struct {
	Separator string   `yaml:"separator"`
	Fields    []string `yaml:"fields"`
}

type timestampField struct {
	Value string `yaml:"value"`
	// Format is unix (the default: a decimal number of Unit) or rfc3339
	// (v2).
	Format    string `yaml:"format"`
	Unit      string `yaml:"unit"`
	Tolerance string `yaml:"tolerance"`
	Window    string `yaml:"window"`
}

type eventField struct {
	Key  string `yaml:"key"`
	Type string `yaml:"type"`
	// Cases, instead of Key and Type (v2), are tried in order: the first
	// whose key's references are all present gives the key and type.
	Cases       []caseField `yaml:"cases"`
	Fingerprint []string    `yaml:"fingerprint"`
	// FingerprintForm is canonical (the default) or compact.
	FingerprintForm string `yaml:"fingerprint_form"`
	Batch           string `yaml:"batch"`
	BatchBody       string `yaml:"batch_body"`
}

type caseField struct {
	Key  string `yaml:"key"`
	Type string `yaml:"type"`
	// When lists the members the case needs present; Final keeps a case
	// whose When holds (its key missing is 400, not the next case);
	// Match holds members to patterns once it applies; Fingerprint is
	// the case's own.
	When        []string          `yaml:"when"`
	Final       bool              `yaml:"final"`
	Match       map[string]string `yaml:"match"`
	Fingerprint []string          `yaml:"fingerprint"`
}

type ackField struct {
	Status      int    `yaml:"status"`
	ContentType string `yaml:"content_type"`
	Body        string `yaml:"body"`
}

type replayField struct {
	// IDField names the members (or form fields) `replay --id-suffix`
	// rewrites, for a spec whose key is not one json member: one, or a
	// list when the key takes several shapes.
	IDField values            `yaml:"id_field"`
	Headers map[string]string `yaml:"headers"`
	Query   map[string]string `yaml:"query"`
}

type exampleField struct {
	Name   string `yaml:"name"`
	Source string `yaml:"source"`
	// SelfDerived, instead of Source, says why the gateway publishes no
	// delivery with its secret: the example was signed here from its
	// documented formula (as providertest.Kit.SelfDerived).
	SelfDerived string            `yaml:"self_derived"`
	Secret      string            `yaml:"secret"`
	Settings    map[string]string `yaml:"settings"`
	Now         string            `yaml:"now"`
	URL         string            `yaml:"url"`
	// Path is the service path the request carries after the route (v2,
	// {{path}}).
	Path       string            `yaml:"path"`
	Headers    map[string]values `yaml:"headers"`
	Body       *string           `yaml:"body"`
	BodyBase64 string            `yaml:"body_base64"`
	Key        string            `yaml:"key"`
	Type       string            `yaml:"type"`
}

// headerField is the signature header: its name alone (version 1, the
// item grammar in the loose knobs of signatureField) or, in version 2, an
// object that holds the whole grammar.
type headerField struct {
	Name string
	// Object is set when the header was written as an object.
	Object bool
	// Aliases are the other names the header may be sent under (v2).
	Aliases        []string
	Repeated       bool
	Items          *itemsField
	Prefix         string
	PrefixOptional bool
}

// itemsField is a header of several items: "t=1,v1=ab,v1=cd".
type itemsField struct {
	Separator string `yaml:"separator"`
	Assign    string `yaml:"assign"`
	Name      string `yaml:"name"`
}

// headerObject is headerField as written in version 2.
type headerObject struct {
	Name           string      `yaml:"name"`
	Aliases        []string    `yaml:"aliases"`
	Repeated       bool        `yaml:"repeated"`
	Items          *itemsField `yaml:"items"`
	Prefix         string      `yaml:"prefix"`
	PrefixOptional bool        `yaml:"prefix_optional"`
}

// UnmarshalYAML reads a scalar as a name and a mapping as the grammar,
// strictly: the YAML library does not pass KnownFields down to a custom
// unmarshaler, so the members are checked here.
func (h *headerField) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		h.Name = n.Value
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: signature.header is a name or an object", n.Line)
	}
	if err := knownKeys(n, "signature.header", "name", "aliases", "repeated", "items", "prefix", "prefix_optional"); err != nil {
		return err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "items" {
			if err := knownKeys(n.Content[i+1], "signature.header.items", "separator", "assign", "name"); err != nil {
				return err
			}
		}
	}
	var o headerObject
	if err := n.Decode(&o); err != nil {
		return err
	}
	*h = headerField{Name: o.Name, Object: true, Aliases: o.Aliases, Repeated: o.Repeated, Items: o.Items, Prefix: o.Prefix, PrefixOptional: o.PrefixOptional}
	return nil
}

// knownKeys refuses a mapping member not in names.
func knownKeys(n *yaml.Node, field string, names ...string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: %s is not an object", n.Line, field)
	}
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(names, k.Value) {
			return fmt.Errorf("line %d: field %s not found in %s", k.Line, k.Value, field)
		}
	}
	return nil
}

// values is a header's values: one string, or a list for a header sent
// more than once.
type values []string

// UnmarshalYAML reads a scalar as one value and a sequence as several.
func (v *values) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*v = values{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*v = list
	return nil
}

// maxFileBytes bounds a spec file, and what it decodes to once its aliases
// are expanded: the longest of the eleven built-in ones, examples
// included, is a few kilobytes.
const maxFileBytes = 1 << 20

// decode reads exactly one YAML document into a file, refusing unknown
// fields, and returns its errors as one line.
func decode(data []byte) (*file, error) {
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("longer than %d bytes", maxFileBytes)
	}
	// An alias costs a few bytes of the file and a copy of what it names
	// once decoded (and again when compiled): a 100 KB body named 4,000
	// times is 400 MB from a 125 KiB file. The node tree keeps aliases as
	// pointers, so it is measured before anything is expanded.
	var tree yaml.Node
	if err := yaml.Unmarshal(data, &tree); err != nil {
		return nil, oneLine(err)
	}
	if _, ok := decodedSize(&tree, maxFileBytes, map[*yaml.Node]int{}); !ok {
		return nil, fmt.Errorf("decodes to more than %d bytes once its aliases are expanded", maxFileBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file")
		}
		return nil, oneLine(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	return &f, nil
}

// decodedSize is the size of n with every alias expanded: its scalars'
// bytes plus one for each node, as a decode into Go values copies them.
// It stops, with ok false, once the size passes limit; sizes holds what
// each node already measured expands to, so that an alias costs its
// target's size without walking it again (aliases of aliases included).
func decodedSize(n *yaml.Node, limit int, sizes map[*yaml.Node]int) (size int, ok bool) {
	if n == nil {
		return 0, true
	}
	if s, done := sizes[n]; done {
		return s, s <= limit
	}
	sizes[n] = limit + 1 // while it is walked: an alias of its own ancestor is over
	size = 1 + len(n.Value)
	if n.Kind == yaml.AliasNode {
		s, ok := decodedSize(n.Alias, limit, sizes)
		size += s
		if !ok {
			return size, false
		}
	}
	for _, c := range n.Content {
		s, ok := decodedSize(c, limit-size, sizes)
		size += s
		if !ok || size > limit {
			return size, false
		}
	}
	sizes[n] = size
	return size, size <= limit
}

// oneLine turns the YAML library's errors, which list one problem per
// line and name Go types, into one line in the spec's own terms.
func oneLine(err error) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msg = strings.Join(te.Errors, "; ")
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	for _, noise := range []string{" in type spec.file", " in type spec.secretsField", " in type spec.settingField",
		" in type spec.signatureField", " in type spec.timestampField", " in type spec.eventField",
		" in type spec.ackField", " in type spec.caseField", " in type spec.joinedField", " in type spec.replayField", " in type spec.exampleField",
		" in type spec.headerAlias", " in type spec.longerThanField"} {
		msg = strings.ReplaceAll(msg, noise, "")
	}
	msg = strings.ReplaceAll(msg, "\n", "; ")
	return errors.New(msg)
}
