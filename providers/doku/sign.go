package doku

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// TimestampLayout is how DOKU writes Request-Timestamp: ISO 8601 in UTC to
// the second ("2020-08-11T08:45:42Z").
const TimestampLayout = "2006-01-02T15:04:05Z"

// SignatureHeader returns the Signature header value DOKU would send for a
// notification with these headers and body, signed with secretKey for the
// notification path target: "HMACSHA256=" and the base64 HMAC-SHA256 of
// Component.
func SignatureHeader(secretKey, clientID, requestID, timestamp, target string, body []byte) string {
	mac := signature.HMACSHA256([]byte(secretKey), Component(clientID, requestID, timestamp, target, body))
	return signaturePrefix + base64.StdEncoding.EncodeToString(mac)
}

// Sign signs body for `webhookd replay` and tests: it returns body
// unchanged and the four headers DOKU sends, with the configured client id,
// a fresh random Request-Id, the current time, and a Signature made with
// the first secret key for the configured notification path.
func (a *Adapter) Sign(body []byte) (providers.Delivery, error) {
	if len(a.secrets.Keys) == 0 || a.clientID == "" {
		return providers.Delivery{}, errors.New("doku: no client id or secret key configured")
	}
	requestID, err := newRequestID()
	if err != nil {
		return providers.Delivery{}, err
	}
	ts := a.window.Clock.Now().UTC().Format(TimestampLayout)
	h := make(http.Header, 4)
	h.Set(HeaderClientID, a.clientID)
	h.Set(HeaderRequestID, requestID)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, SignatureHeader(string(a.secrets.Keys[0]), a.clientID, requestID, ts, a.target, body))
	return providers.Delivery{Header: h, Body: body}, nil
}

// newRequestID returns a random UUID (version 4), the form of DOKU's
// Request-Id.
func newRequestID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("doku: request id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}
