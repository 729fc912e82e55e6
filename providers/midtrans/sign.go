package midtrans

import (
	"errors"
	"net/http"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Sign signs body for `webhookd replay` and tests: it returns body
// with its signature_key recomputed under the server key, as Midtrans signs
// a notification, and no headers. Only the bytes of signature_key's value
// change; every other byte of body is kept, so a pretty-printed fixture
// stays pretty-printed. A body without signature_key gets one as its first
// member.
func (a *Adapter) Sign(body []byte) (providers.Delivery, error) {
	if a.serverKey == "" {
		return providers.Delivery{}, errors.New("midtrans: no server key configured")
	}
	o, err := rawjson.Parse(body)
	if err != nil {
		return providers.Delivery{}, errors.New("midtrans: cannot sign: body is not a JSON object with unique member names")
	}
	signed, err := signedText(o)
	if err != nil {
		return providers.Delivery{}, errors.New("midtrans: cannot sign: order_id, status_code or gross_amount missing or malformed")
	}
	value := `"` + a.signatureKey(signed) + `"`

	m, ok, err := o.Get(SignatureField)
	if err != nil {
		return providers.Delivery{}, errors.New("midtrans: cannot sign: signature_key is spelled another way")
	}
	var out []byte
	if ok {
		out = make([]byte, 0, len(body)-(m.End-m.Start)+len(value))
		out = append(out, body[:m.Start]...)
		out = append(out, value...)
		out = append(out, body[m.End:]...)
	} else {
		member := `"` + SignatureField + `":` + value
		if o.Len() > 0 {
			member += ","
		}
		at := o.Open()
		out = make([]byte, 0, len(body)+len(member))
		out = append(out, body[:at]...)
		out = append(out, member...)
		out = append(out, body[at:]...)
	}
	return providers.Delivery{Header: http.Header{}, Body: out}, nil
}
