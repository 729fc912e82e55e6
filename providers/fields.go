package providers

import (
	"strings"

	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// BodyFields reads fields of a verified JSON body by dotted path, with the
// hardened parser that event keys are read with (a member named twice, or
// spelled two ways, reads as absent): a route's where (WEBHOOKD_CONFIG)
// compares them. The body is parsed once, on the first Lookup.
type BodyFields struct {
	body   []byte
	parsed bool
	obj    *rawjson.Object
}

// NewBodyFields returns the fields of body, unparsed yet.
func NewBodyFields(body []byte) *BodyFields { return &BodyFields{body: body} }

// Lookup returns the text of the member at path ("data.object.currency":
// each name but the last an object): a string's decoded text, a number or
// a boolean as written. ok is false when it is absent, null, of another
// kind (an object, an array), or the body is not a JSON object.
func (f *BodyFields) Lookup(path string) (string, bool) {
	if !f.parsed {
		f.parsed = true
		f.obj, _ = rawjson.Parse(f.body)
	}
	o := f.obj
	if o == nil {
		return "", false
	}
	names := strings.Split(path, ".")
	for _, name := range names[:len(names)-1] {
		next, ok, err := o.Object(name)
		if !ok || err != nil {
			return "", false
		}
		o = next
	}
	last := names[len(names)-1]
	m, present, err := o.Get(last)
	if err != nil || !present || m.IsNull() {
		return "", false
	}
	if v := string(m.Value); v == "true" || v == "false" {
		return v, true
	}
	s, ok, err := o.Scalar(last)
	if err != nil {
		return "", false
	}
	return s, ok
}
