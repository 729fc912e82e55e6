package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// The functions below build Kit.Retry and Kit.Change: each returns a body
// as the provider would send it, changing only what it says.

var pendingWebhooks = regexp.MustCompile(`"pending_webhooks"(\s*):(\s*)([0-9]+)`)

// BumpPendingWebhooks is Stripe's Kit.Retry: it adds one to the event's
// pending_webhooks, which Stripe changes between attempts of one event, and
// leaves every other byte alone. A body without pending_webhooks is returned
// unchanged (and then fails the kit's "Retry must change the body" check).
func BumpPendingWebhooks(body []byte) []byte {
	return pendingWebhooks.ReplaceAllFunc(body, func(m []byte) []byte {
		sub := pendingWebhooks.FindSubmatch(m)
		n, err := strconv.Atoi(string(sub[3]))
		if err != nil {
			return m
		}
		return fmt.Appendf(nil, `"pending_webhooks"%s:%s%d`, sub[1], sub[2], n+1)
	})
}

// ChangeAmount returns a Kit.Change that alters the first of names that
// occurs in the body as a member (at any depth) whose value is a number or a
// string starting with a digit: a "1" is put before its first digit, which
// keeps it a well-formed amount ("60000.00" becomes "160000.00") and leaves
// every other byte alone. A body with none of names is returned unchanged
// (and then fails the kit's "Change must change the body" check).
func ChangeAmount(names ...string) func(body []byte) []byte {
	res := make([]*regexp.Regexp, len(names))
	for i, n := range names {
		res[i] = regexp.MustCompile(`("` + regexp.QuoteMeta(n) + `"\s*:\s*"?)([0-9])`)
	}
	return func(body []byte) []byte {
		for _, re := range res {
			if loc := re.FindSubmatchIndex(body); loc != nil {
				at := loc[4] // the first digit
				out := make([]byte, 0, len(body)+1)
				out = append(out, body[:at]...)
				out = append(out, '1')
				return append(out, body[at:]...)
			}
		}
		return body
	}
}

// Reordered returns body with its top-level members in reverse order,
// compact, each value's bytes kept as they are: the same event as a provider
// that serialises its members differently would send it. A body that is not
// a JSON object is returned unchanged.
func Reordered(body []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return body
	}
	type member struct {
		name  string
		value json.RawMessage
	}
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return body
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return body
		}
		members = append(members, member{name, v})
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for i := len(members) - 1; i >= 0; i-- {
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		quoted, _ := json.Marshal(members[i].name)
		out.Write(quoted)
		out.WriteByte(':')
		out.Write(members[i].value)
	}
	out.WriteByte('}')
	return out.Bytes()
}

// WithMember returns a function that inserts the top-level member name with
// the raw JSON value as the body's first member, leaving every other byte
// alone: a field the provider added since the first attempt. The body must
// be a JSON object that does not have name yet; any other body is returned
// unchanged.
func WithMember(name, value string) func(body []byte) []byte {
	return func(body []byte) []byte {
		o, err := rawjson.Parse(body)
		if err != nil {
			return body
		}
		if _, ok, err := o.Get(name); ok || err != nil {
			return body
		}
		quoted, _ := json.Marshal(name)
		insert := string(quoted) + ":" + value
		if o.Len() > 0 {
			insert += ","
		}
		out := make([]byte, 0, len(body)+len(insert))
		out = append(out, body[:o.Open()]...)
		out = append(out, insert...)
		return append(out, body[o.Open():]...)
	}
}

// Chain returns a function that applies fs in order.
func Chain(fs ...func(body []byte) []byte) func(body []byte) []byte {
	return func(body []byte) []byte {
		for _, f := range fs {
			body = f(body)
		}
		return body
	}
}

// FormReordered returns a form body with its pairs in reverse order, each
// pair's bytes kept: the same callback as a provider that posts its fields
// in another order would send it. A body that is not a form is returned
// unchanged.
func FormReordered(body []byte) []byte {
	if _, ok := parseFormFields(body); !ok {
		return body
	}
	pairs := strings.Split(string(body), "&")
	for i, j := 0, len(pairs)-1; i < j; i, j = i+1, j-1 {
		pairs[i], pairs[j] = pairs[j], pairs[i]
	}
	return []byte(strings.Join(pairs, "&"))
}

// WithFormField returns a function that appends the field name=value
// (escaped) to a form body that does not have it yet: a field the provider
// added since the first attempt. Any other body is returned unchanged.
func WithFormField(name, value string) func(body []byte) []byte {
	return func(body []byte) []byte {
		fields, ok := parseFormFields(body)
		if !ok {
			return body
		}
		for _, f := range fields {
			if f.name == name {
				return body
			}
		}
		return []byte(string(body) + "&" + url.QueryEscape(name) + "=" + url.QueryEscape(value))
	}
}

// ChangeFormAmount returns a Kit.Change for a form: it puts a "1" before
// the value of the first of names that the form has and whose value starts
// with a digit ("10000" becomes "110000"), every other byte kept. A body
// with none of them is returned unchanged (and then fails the kit's
// "Change must change the body" check).
func ChangeFormAmount(names ...string) func(body []byte) []byte {
	return func(body []byte) []byte {
		fields, ok := parseFormFields(body)
		if !ok {
			return body
		}
		for _, n := range names {
			for _, f := range fields {
				if f.name == n && f.end > f.start && '0' <= body[f.start] && body[f.start] <= '9' {
					out := make([]byte, 0, len(body)+1)
					out = append(out, body[:f.start]...)
					out = append(out, '1')
					return append(out, body[f.start:]...)
				}
			}
		}
		return body
	}
}
