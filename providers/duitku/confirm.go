package duitku

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

// DefaultAPIURL is Duitku's production API, which Confirm asks by default.
// The sandbox API is SandboxAPIURL.
const DefaultAPIURL = "https://passport.duitku.com"

// SandboxAPIURL is Duitku's sandbox API.
const SandboxAPIURL = "https://sandbox.duitku.com"

// StatusPath is the path of Duitku's transaction status API under an API
// URL (https://docs.duitku.com/api/en/#check-transaction).
const StatusPath = "/webapi/api/merchant/transactionStatus"

// DefaultStatusTimeout bounds one call of the status API, connection
// included: the call runs under the event's claim, before the forward.
const DefaultStatusTimeout = 5 * time.Second

// MaxStatusResponseBytes bounds how much of a status answer Confirm reads.
// Real answers are about 200 bytes.
const MaxStatusResponseBytes = 64 << 10

// Confirm's errors. ErrStatusMismatch wraps providers.ErrMismatch (the
// receiver answers 401 and forwards nothing); ErrStatusUnavailable wraps
// providers.ErrUnavailable (503 with Retry-After, so that Duitku retries).
var (
	// ErrStatusMismatch means the status API reports another status,
	// reference, amount or merchantOrderId than the callback, or the
	// callback's resultCode is not one Duitku sends.
	ErrStatusMismatch = fmt.Errorf("%w: duitku: status API reports a different transaction", providers.ErrMismatch)
	// ErrStatusUnavailable means the status API could not be asked: it was
	// unreachable, timed out, answered something other than 200, or an
	// answer that is too large or says no status.
	ErrStatusUnavailable = fmt.Errorf("%w: duitku: status API unavailable", providers.ErrUnavailable)
)

// callbackStatuses maps a callback's resultCode to the statusCodes of the
// status API that agree with it. Duitku's callback knows two codes ("00"
// success, "01" failed), its status API three ("00" success, "01" pending,
// "02" failed or expired; duitku-php, example TransactionStatus-Api.php),
// and Duitku's own sources disagree on whether a callback's "01" is a
// failure or still pending (docs/providers.md, "Duitku"). "00" must
// therefore be confirmed by "00" alone: it is the status a forger wants.
// "01" is confirmed by "01" or "02": refusing a genuine failure would
// only make Duitku retry it in vain.
var callbackStatuses = map[string][]string{
	"00": {"00"},
	"01": {"01", "02"},
}

// WithStatusCheck enables Confirm: before a callback is forwarded, the
// adapter asks Duitku's transaction status API under apiURL
// (DefaultAPIURL, or SandboxAPIURL for a sandbox project) and refuses the
// callback unless Duitku reports the same transaction in the same state.
// An empty apiURL means DefaultAPIURL.
func WithStatusCheck(apiURL string) Option {
	return statusapi.WithCheck(statusOf, apiURL)
}

// WithHTTPClient makes Confirm use c (its transport, for one) instead of a
// client of its own. Redirects are still not followed, whatever c says. A
// nil c is ignored.
func WithHTTPClient(c *http.Client) Option {
	return statusapi.WithHTTPClient(statusOf, c)
}

// WithStatusTimeout bounds each status call (DefaultStatusTimeout
// otherwise). New refuses a timeout that is not positive.
func WithStatusTimeout(d time.Duration) Option {
	return statusapi.WithTimeout(statusOf, d)
}

// ParseAPIURL checks a Duitku API base URL (statusapi.ParseAPIURL: https,
// or plain http for a loopback host only, without credentials, query or
// fragment; a trailing slash dropped). The configuration uses it to report
// a bad URL before start-up; New refuses what it refuses.
func ParseAPIURL(raw string) (*url.URL, error) {
	return statusapi.ParseAPIURL(Name, raw)
}

// Confirm asks Duitku's transaction status API (POST {api}/webapi/api/
// merchant/transactionStatus, JSON merchantCode, merchantOrderId and
// signature = md5(merchantCode + merchantOrderId + apiKey), with the first
// API key) whether the verified callback in body is true, and returns nil
// only when Duitku reports the same merchantOrderId, the same reference,
// the same amount (compared as decimals) and a statusCode that agrees with
// the callback's resultCode (see callbackStatuses). The callback's
// signature covers only merchantCode, amount and merchantOrderId: without
// this check, one captured callback, even a failed one, can be re-sent
// with resultCode=00 and any reference, and each variant is a new event.
//
// Duitku's API reports only the current state, so a callback that a later
// change has superseded no longer matches and is refused.
//
// Without WithStatusCheck, Confirm returns nil at once. Its errors wrap
// providers.ErrMismatch or providers.ErrUnavailable.
func (a *Adapter) Confirm(ctx context.Context, it providers.Item) error {
	body := it.Body
	if a.statusAPI == nil {
		return nil
	}
	f, err := parseForm(body)
	if err != nil {
		return ErrStatusMismatch
	}
	order, _ := f.get(FieldMerchantOrderID)
	ref, _ := f.get(FieldReference)
	code, _ := f.get(FieldResultCode)
	amount, _ := f.get(FieldAmount)
	agree, known := callbackStatuses[code]
	if !known || order == "" || ref == "" {
		return ErrStatusMismatch
	}
	got, err := a.fetchStatus(ctx, order)
	if err != nil {
		return err
	}
	switch {
	case got.order != order, got.reference != ref, !statusapi.SameDecimal(got.amount, amount):
		return ErrStatusMismatch
	}
	for _, s := range agree {
		if got.status == s {
			return nil
		}
	}
	return ErrStatusMismatch
}

// statusReport is what Confirm reads from a status answer.
type statusReport struct {
	order, reference, amount, status string
}

// fetchStatus calls the status API for merchantOrderID.
func (a *Adapter) fetchStatus(ctx context.Context, merchantOrderID string) (statusReport, error) {
	req, err := json.Marshal(map[string]string{
		"merchantCode":    a.merchantCode,
		"merchantOrderId": merchantOrderID,
		"signature":       StatusSignature(a.merchantCode, merchantOrderID, a.apiKeys[0]),
	})
	if err != nil {
		return statusReport{}, ErrStatusUnavailable
	}
	r, err := http.NewRequest(http.MethodPost, a.statusAPI.String()+StatusPath, bytes.NewReader(req))
	if err != nil {
		return statusReport{}, ErrStatusUnavailable
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json")
	// Duitku answers an unknown order or a bad request signature with a
	// 4xx. A forged callback cannot get here (its signature needs the API
	// key), so any answer but 200 is a misconfiguration or an outage: 503,
	// never a genuine callback refused for good.
	_, answer, err := a.status.Call(MaxStatusResponseBytes, ErrStatusUnavailable).Do(ctx, r)
	if err != nil {
		return statusReport{}, err
	}
	return parseStatus(answer)
}

// parseStatus reads a 200 answer of the status API:
// {"merchantOrderId":..,"reference":..,"amount":"100000","fee":"0.00",
// "statusCode":"00","statusMessage":"SUCCESS"}. An answer without a
// statusCode cannot confirm anything.
func parseStatus(answer []byte) (statusReport, error) {
	o, err := rawjson.Parse(answer)
	if err != nil {
		return statusReport{}, fmt.Errorf("%w (answer is not a JSON object)", ErrStatusUnavailable)
	}
	var r statusReport
	var ok bool
	var err1, err2, err3, err4 error
	r.status, ok, err1 = o.Scalar("statusCode")
	r.order, _, err2 = o.Scalar("merchantOrderId")
	r.reference, _, err3 = o.Scalar("reference")
	r.amount, _, err4 = o.Scalar("amount")
	if errors.Join(err1, err2, err3, err4) != nil {
		return statusReport{}, fmt.Errorf("%w (answer has malformed fields)", ErrStatusUnavailable)
	}
	if !ok || r.status == "" {
		return statusReport{}, fmt.Errorf("%w (answer has no statusCode)", ErrStatusUnavailable)
	}
	return r, nil
}

// StatusSignature returns the signature of a status API request:
// md5(merchantCode + merchantOrderId + apiKey) in lowercase hex.
func StatusSignature(merchantCode, merchantOrderID, apiKey string) string {
	sum := md5.Sum([]byte(merchantCode + merchantOrderID + apiKey))
	return hex.EncodeToString(sum[:])
}
