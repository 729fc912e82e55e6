package adyen

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// ItemSignature returns the hmacSignature Adyen puts in an item whose
// signed string is text (pspReference:...:success), under the hex-decoded
// key.
func ItemSignature(key []byte, text string) string {
	return base64.StdEncoding.EncodeToString(signature.HMACSHA256(key, []byte(text)))
}

// Sign signs body for `webhookd replay` and tests: it sets every
// item's additionalData.hmacSignature to its signature under the first
// configured key (adding the member, or additionalData, where missing) and
// leaves every other byte alone. With basic auth configured, it sets the
// Authorization header too.
func (a *Adapter) Sign(body []byte) (providers.Delivery, error) {
	if len(a.keys) == 0 {
		return providers.Delivery{}, errors.New("adyen: no HMAC key configured")
	}
	n, err := readNotification(body)
	if err != nil {
		return providers.Delivery{}, errors.New("adyen: body is not a readable notification")
	}
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	for i := range n.items {
		it := &n.items[i]
		quoted, _ := json.Marshal(ItemSignature(a.keys[0], string(it.f.signedText())))
		ad, ok, _ := it.obj.Get("additionalData")
		if !ok || ad.IsNull() {
			text := `"additionalData":{"hmacSignature":` + string(quoted) + `}`
			if ok {
				// additionalData is null: replace it.
				edits = append(edits, edit{it.objAt + ad.Start, it.objAt + ad.End, `{"hmacSignature":` + string(quoted) + `}`})
				continue
			}
			if it.obj.Len() > 0 {
				text += ","
			}
			at := it.objAt + it.obj.Open()
			edits = append(edits, edit{at, at, text})
			continue
		}
		adObj, _, err := it.obj.Object("additionalData")
		if err != nil {
			return providers.Delivery{}, errors.New("adyen: additionalData is not an object")
		}
		adAt := it.objAt + ad.Start
		if sig, ok, _ := adObj.Get("hmacSignature"); ok {
			edits = append(edits, edit{adAt + sig.Start, adAt + sig.End, string(quoted)})
			continue
		}
		text := `"hmacSignature":` + string(quoted)
		if adObj.Len() > 0 {
			text += ","
		}
		at := adAt + adObj.Open()
		edits = append(edits, edit{at, at, text})
	}
	// Items, and their members, come in body order, so edits do too.
	out := make([]byte, 0, len(body)+len(edits)*64)
	last := 0
	for _, e := range edits {
		out = append(out, body[last:e.start]...)
		out = append(out, e.text...)
		last = e.end
	}
	out = append(out, body[last:]...)
	var h http.Header
	if a.basicAuth != "" {
		h = http.Header{"Authorization": {a.basicAuth}}
	}
	return providers.Delivery{Header: h, Body: out}, nil
}
