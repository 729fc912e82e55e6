package paypal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

// Confirm's errors. ErrEventMismatch wraps providers.ErrMismatch (the
// receiver answers 401 and forwards nothing); the others wrap
// providers.ErrUnavailable (503 with Retry-After, so that PayPal retries).
var (
	// ErrEventMismatch means PayPal's API reports the event with another
	// event_type, resource_type, or resource id, status, state, amount,
	// custom_id, invoice_id or supplementary_data than the delivery: the body was forged under
	// a genuine signature (its CRC-32 matched).
	ErrEventMismatch = fmt.Errorf("%w: paypal: PayPal's API reports the event differently", providers.ErrMismatch)
	// ErrEventUnknown means PayPal's API answered 404 for the event's id.
	// PayPal may deliver an event slightly before its API can return it
	// (paypal/PayPal-node-SDK#125, whose advice is to answer 503), so this
	// is not a mismatch: PayPal retries a genuine event, and a forged id
	// is retried by nobody and never forwarded.
	ErrEventUnknown = fmt.Errorf("%w: paypal: PayPal's API does not know the event yet", providers.ErrUnavailable)
	// ErrAPIUnavailable means PayPal's API could not be asked: no
	// connection, a timeout, an answer other than 200 (or 404 for the
	// event), one too large or not JSON, or a token refused (wrong client
	// id or secret, or a sandbox app against the live API).
	ErrAPIUnavailable = fmt.Errorf("%w: paypal: PayPal's API unavailable", providers.ErrUnavailable)
)

// DefaultAPIURL is PayPal's live REST API; the sandbox's is
// https://api-m.sandbox.paypal.com.
const DefaultAPIURL = "https://api-m.paypal.com"

// DefaultConfirmTimeout bounds one Confirm: the token request, when the
// cached token has expired, and the event request together.
const DefaultConfirmTimeout = 10 * time.Second

// MaxAPIResponseBytes bounds how much of an API answer is read. An event is
// a few KiB.
const MaxAPIResponseBytes = 256 << 10

// confirmedResourceFields are the resource members Confirm requires to be
// the same in the delivery and in PayPal's record (both absent counts as
// the same): what a core acts on for money. status is the v2 resources'
// (captures, orders), state the v1 resources' (sales); amount is compared
// whole (value and currency_code, or total and currency), and
// supplementary_data holds the related order id a core may look the
// payment up by.
var confirmedResourceFields = []string{"id", "status", "state", "amount", "custom_id", "invoice_id", "supplementary_data"}

// WithConfirmation enables Confirm: before a verified delivery is forwarded
// the adapter fetches the event by id from PayPal's API at apiURL
// (DefaultAPIURL, or the sandbox's) with an OAuth token obtained from the
// REST app's client id and secret, and refuses the delivery unless PayPal
// reports the same event. New refuses an apiURL that is not https (plain
// http only to a loopback host), has credentials, a query or a fragment,
// and an empty id or secret.
func WithConfirmation(apiURL, clientID, clientSecret string) Option {
	return func(a *Adapter) error {
		a.api = &url.URL{Opaque: apiURL} // checked by New
		a.clientID, a.clientSecret = clientID, clientSecret
		return nil
	}
}

// WithConfirmTimeout bounds each Confirm (DefaultConfirmTimeout).
func WithConfirmTimeout(d time.Duration) Option {
	return func(a *Adapter) error {
		a.confirmTimeout = d
		return nil
	}
}

// checkConfirmation parses WithConfirmation's URL once options are applied.
func (a *Adapter) checkConfirmation() error {
	if a.api == nil {
		return nil
	}
	u, err := ParseAPIURL(a.api.Opaque)
	if err != nil {
		return err
	}
	if a.clientID == "" || a.clientSecret == "" {
		return errors.New("paypal: confirmation needs a client id and a client secret")
	}
	a.api = u
	if a.confirmTimeout <= 0 {
		a.confirmTimeout = DefaultConfirmTimeout
	}
	return nil
}

// ParseAPIURL parses a PayPal API base URL (statusapi.ParseAPIURL: https,
// or plain http to a loopback host for tests, without credentials, query or
// fragment): the client secret is sent to it.
func ParseAPIURL(raw string) (*url.URL, error) {
	return statusapi.ParseAPIURL(Name, raw)
}

// Confirm asks PayPal's API for the event of the verified delivery in body
// (GET /v1/notifications/webhooks-events/{id}) and returns nil only when
// PayPal reports the same id, event_type and resource_type, and the same
// resource id, status, state, amount, custom_id, invoice_id and
// supplementary_data (each
// compared in canonical JSON; a member both lack counts as the same). The
// event's resource is PayPal's snapshot at the time of the event, so a
// later change of the payment does not refuse it.
//
// PayPal's signature covers the body only through CRC-32; this is what
// makes a forged body under a captured signature harmless. Without
// WithConfirmation, Confirm returns nil at once. Its errors wrap
// providers.ErrMismatch or providers.ErrUnavailable.
func (a *Adapter) Confirm(ctx context.Context, it providers.Item) error {
	body := it.Body
	if a.api == nil {
		return nil
	}
	delivered, err := rawjson.Parse(body)
	if err != nil {
		return ErrEventMismatch
	}
	id, ok, err := delivered.String("id")
	if err != nil || !ok || !providers.IsToken(id, MaxFieldBytes) || id == "." || id == ".." {
		return ErrEventMismatch
	}
	ctx, cancel := context.WithTimeout(ctx, a.confirmTimeout)
	defer cancel()
	got, err := a.fetchEvent(ctx, id)
	if err != nil {
		return err
	}
	return sameEvent(delivered, got)
}

// sameEvent compares the members Confirm checks.
func sameEvent(delivered, got *rawjson.Object) error {
	same := func(a, b *rawjson.Object, names ...string) bool {
		fa, errA := a.Fingerprint(names...)
		fb, errB := b.Fingerprint(names...)
		return errA == nil && errB == nil && fa == fb
	}
	if !same(delivered, got, "id", "event_type", "resource_type") {
		return ErrEventMismatch
	}
	dr, dok, errD := delivered.Object("resource")
	gr, gok, errG := got.Object("resource")
	switch {
	case errD != nil || errG != nil || dok != gok:
		return ErrEventMismatch
	case dok && !same(dr, gr, confirmedResourceFields...):
		return ErrEventMismatch
	}
	return nil
}

// fetchEvent GETs the event id with a bearer token.
func (a *Adapter) fetchEvent(ctx context.Context, id string) (*rawjson.Object, error) {
	token, err := a.accessToken(ctx)
	if err != nil {
		return nil, err
	}
	u := *a.api
	u.Path = a.api.Path + "/v1/notifications/webhooks-events/" + id
	u.RawPath = a.api.EscapedPath() + "/v1/notifications/webhooks-events/" + url.PathEscape(id)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, ErrAPIUnavailable
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	status, answer, err := a.call(req)
	switch {
	case err != nil:
		return nil, err
	case status == http.StatusNotFound:
		return nil, ErrEventUnknown
	case status == http.StatusUnauthorized:
		// The token was revoked or expired early: the next delivery
		// (PayPal's retry of this one) gets a new one.
		a.token.forget(token)
		return nil, fmt.Errorf("%w (token refused)", ErrAPIUnavailable)
	case status != http.StatusOK:
		return nil, fmt.Errorf("%w (event lookup answered %d)", ErrAPIUnavailable, status)
	}
	o, err := rawjson.Parse(answer)
	if err != nil {
		return nil, fmt.Errorf("%w (event lookup answer is not a JSON object)", ErrAPIUnavailable)
	}
	return o, nil
}

// call sends req with the adapter's client and reads at most
// MaxAPIResponseBytes of the answer. Its error never quotes the URL.
func (a *Adapter) call(req *http.Request) (int, []byte, error) {
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%w (%s)", ErrAPIUnavailable, fetchFailure(err))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxAPIResponseBytes+1))
	switch {
	case err != nil:
		return 0, nil, fmt.Errorf("%w (reading the answer: %s)", ErrAPIUnavailable, fetchFailure(err))
	case len(answer) > MaxAPIResponseBytes:
		return 0, nil, fmt.Errorf("%w (answer larger than %d bytes)", ErrAPIUnavailable, MaxAPIResponseBytes)
	}
	return resp.StatusCode, answer, nil
}

// tokenCache keeps one OAuth access token until shortly before it expires.
type tokenCache struct {
	mu      sync.Mutex
	token   string
	expires time.Time
}

// forget drops token if it is still the cached one.
func (c *tokenCache) forget(token string) {
	c.mu.Lock()
	if c.token == token {
		c.token = ""
	}
	c.mu.Unlock()
}

// accessToken returns the cached token, or gets one with the client
// credentials grant (POST /v1/oauth2/token). One request at a time: the
// callers meanwhile wait for it, each within its own bounded context.
func (a *Adapter) accessToken(ctx context.Context) (string, error) {
	a.token.mu.Lock()
	defer a.token.mu.Unlock()
	if a.token.token != "" && a.now().Before(a.token.expires) {
		return a.token.token, nil
	}
	u := *a.api
	u.Path = a.api.Path + "/v1/oauth2/token"
	u.RawPath = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader("grant_type=client_credentials"))
	if err != nil {
		return "", ErrAPIUnavailable
	}
	req.SetBasicAuth(a.clientID, a.clientSecret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	status, answer, err := a.call(req)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		// 401: wrong client id or secret, or credentials of the other
		// environment (sandbox against live). 503 all the same: the
		// operator fixes it and PayPal's retries go through.
		return "", fmt.Errorf("%w (token request answered %d)", ErrAPIUnavailable, status)
	}
	var t struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.Unmarshal(answer, &t); err != nil || t.AccessToken == "" || t.ExpiresIn <= 0 {
		return "", fmt.Errorf("%w (token answer has no access_token or expires_in)", ErrAPIUnavailable)
	}
	life := time.Duration(t.ExpiresIn) * time.Second
	// Renewed a minute early (or at half its life, if shorter), so that a
	// token does not expire between the check and PayPal's.
	life -= min(time.Minute, life/2)
	a.token.token, a.token.expires = t.AccessToken, a.now().Add(life)
	return t.AccessToken, nil
}
