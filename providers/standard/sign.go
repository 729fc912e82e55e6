package standard

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// Sign signs body for `webhookd replay` and tests: it returns body
// unchanged and the headers of a message signed with the first configured
// secret at the current time. A fixture holds only a body, so its message
// id is derived from it ("msg_" and 32 hex digits of its SHA-256): sending
// a fixture again is a retry of the same message, as a sender's retry is.
func (a *Adapter) Sign(body []byte) (providers.Delivery, error) {
	sum := sha256.Sum256(body)
	h, err := a.SignMessage("msg_"+hex.EncodeToString(sum[:16]), body)
	if err != nil {
		return providers.Delivery{}, err
	}
	return providers.Delivery{Header: h, Body: body}, nil
}

// SignMessage returns the headers a Standard Webhooks sender sends with
// body as message id, signed with the first configured secret at the
// current time: a retry of a message is SignMessage with its id again.
func (a *Adapter) SignMessage(id string, body []byte) (http.Header, error) {
	if len(a.keys) == 0 {
		return nil, errors.New("standard: no secret configured")
	}
	ts := strconv.FormatInt(a.window.Clock.Now().Unix(), 10)
	h := make(http.Header, 3)
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, signature.WebhookSignatures(a.keys[:1], id, ts, body))
	return h, nil
}
