package midtrans

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

// Confirm's errors. All but ErrStatusUnavailable wrap providers.ErrMismatch
// (the receiver answers 401 and forwards nothing); ErrStatusUnavailable wraps
// providers.ErrUnavailable (503, so that Midtrans retries).
var (
	// ErrStatusMismatch means the GET status API reports a different
	// transaction_status, fraud_status, order_id or gross_amount than the
	// notification.
	ErrStatusMismatch = fmt.Errorf("%w: midtrans: status API reports a different status", providers.ErrMismatch)
	// ErrRefundMismatch means a notification names a refund_key that the
	// GET status API's answer does not list in its refunds (or has no
	// refunds list at all), or lists with a different refund_amount.
	ErrRefundMismatch = fmt.Errorf("%w: midtrans: status API reports no such refund", providers.ErrMismatch)
	// ErrRefundKeyMissing means a refund or partial_refund notification has
	// no refund_key (absent, empty or null), so it cannot be matched to one
	// of the transaction's refunds. It wraps ErrRefundMismatch.
	ErrRefundKeyMissing = fmt.Errorf("%w (the notification has no refund_key)", ErrRefundMismatch)
	// ErrUnknownTransaction means the GET status API does not know the
	// notification's transaction (404). With a sandbox server key, check
	// that the API URL is the sandbox API.
	ErrUnknownTransaction = fmt.Errorf("%w: midtrans: status API does not know the transaction", providers.ErrMismatch)
	// ErrStatusUnavailable means the GET status API could not be asked: it
	// was unreachable, timed out, answered something other than 200 or 404,
	// or an answer that is too large or says no status.
	ErrStatusUnavailable = fmt.Errorf("%w: midtrans: status API unavailable", providers.ErrUnavailable)
)

// MaxStatusResponseBytes bounds how much of a GET status answer Confirm
// reads. Real answers are about 1 KiB.
const MaxStatusResponseBytes = 64 << 10

// Confirm asks Midtrans's GET status API ({api}/v2/{transaction_id}/status,
// Basic auth with the server key) whether the verified notification in body
// is true, and returns nil only when Midtrans reports:
//
//   - the same transaction_status;
//   - the same fraud_status when the notification has one, and, when it has
//     none, either none or "accept": a notification that drops a
//     "challenge" or "deny" would otherwise read as clean downstream;
//   - the same order_id, since order_id is what the signature binds and the
//     transaction_id in the URL is not signed;
//   - the same gross_amount (compared as decimals), when the answer gives
//     one: the signature joins order_id, status_code and gross_amount
//     without a separator, so one signature also verifies with digits
//     moved from gross_amount into order_id ("A", "200", "1200200.00" and
//     "A2001", "200", "200.00" hash alike), and only Midtrans can say which
//     reading its transaction has;
//   - the same transaction_id, when the answer has one;
//   - for a notification with a refund_key, whatever its status: an entry
//     of the answer's refunds with the same refund_key and, when both give
//     one, the same refund_amount (compared as decimals, never as floats).
//     An answer without a refunds list, or with refunds null, confirms no
//     refund_key. refund_key is part of the event key but not of the
//     signature, so without this a genuine refund notification replayed
//     with another refund_key would be a new event and be forwarded as a
//     second refund;
//   - for a refund or partial_refund notification, a refund_key: one
//     without cannot be matched to a refund, and its key would not tell it
//     from the keyed notification it was cut from. Chargebacks are raised
//     by the bank, not requested with a refund_key, so a chargeback or
//     partial_chargeback without one is checked on the status alone.
//
// Midtrans's status API lists every refund of a refunded transaction, each
// with its refund_key (Midtrans makes one up when the refund request has
// none), so a genuine keyed notification is found; a refusal is 401, which
// Midtrans retries too (docs/providers.md, "Midtrans").
//
// Midtrans's API reports only the current status, so a notification that a
// later status change has already superseded (pending, then settlement a
// second later) no longer matches and is refused; the later change has its
// own notification.
//
// Without WithStatusCheck, Confirm returns nil at once. Its errors wrap
// providers.ErrMismatch or providers.ErrUnavailable.
func (a *Adapter) Confirm(ctx context.Context, it providers.Item) error {
	body := it.Body
	if a.statusAPI == nil {
		return nil
	}
	o, err := rawjson.Parse(body)
	if err != nil {
		return ErrStatusMismatch
	}
	n, err := readNotification(o)
	if err != nil {
		return ErrStatusMismatch
	}
	orderID, _, err := o.Scalar("order_id")
	if err != nil {
		return ErrStatusMismatch
	}
	gross, _, err := o.Scalar("gross_amount")
	if err != nil {
		return ErrStatusMismatch
	}
	// A refund_amount spelled another way ("Refund_Amount") would be read
	// here as absent, so not compared, and by a case-insensitive decoder
	// downstream as whatever it says: refused before asking Midtrans.
	amount, _, amountErr := o.Scalar("refund_amount")
	if errors.Is(amountErr, rawjson.ErrVariant) {
		return ErrRefundMismatch
	}
	got, err := a.fetchStatus(ctx, n.transactionID)
	if err != nil {
		return err
	}
	if err := compare(n, orderID, gross, got); err != nil {
		return err
	}
	switch {
	case n.refundKey != "":
		if amountErr != nil || !got.hasRefunds {
			return ErrRefundMismatch
		}
		return compareRefund(n.refundKey, amount, got.refunds)
	case keyedRefundStatuses[n.status]:
		return ErrRefundKeyMissing
	}
	return nil
}

// keyedRefundStatuses are the transaction statuses of a refund the merchant
// asked for, which always has a refund_key (docs/providers.md, "Midtrans").
var keyedRefundStatuses = map[string]bool{"refund": true, "partial_refund": true}

// refundEntry is one element of a GET status answer's refunds array.
type refundEntry struct {
	key    string // "" when absent
	amount string // raw text; "" when absent
}

// compareRefund requires an entry of refunds with refund_key key and, when
// both amount and the entry's refund_amount are given, the same amount.
func compareRefund(key, amount string, refunds []refundEntry) error {
	for _, r := range refunds {
		if r.key != key {
			continue
		}
		if amount == "" || r.amount == "" || statusapi.SameDecimal(amount, r.amount) {
			return nil
		}
		return ErrRefundMismatch
	}
	return ErrRefundMismatch
}

// statusReport is what Confirm reads from a GET status answer.
type statusReport struct {
	transactionID string
	status        string
	fraudStatus   string
	orderID       string
	// grossAmount is the answer's gross_amount as sent; "" when absent.
	grossAmount string
	// hasRefunds says the answer has a refunds array (possibly empty).
	hasRefunds bool
	refunds    []refundEntry
}

// compare checks a notification (its parsed fields, order_id and
// gross_amount) against the status API's answer.
func compare(n notification, orderID, gross string, got statusReport) error {
	switch {
	case got.status != n.status:
		return ErrStatusMismatch
	case n.fraudStatus != "" && got.fraudStatus != n.fraudStatus:
		return ErrStatusMismatch
	case n.fraudStatus == "" && got.fraudStatus != "" && got.fraudStatus != "accept":
		return ErrStatusMismatch
	case got.orderID != orderID:
		return ErrStatusMismatch
	case got.grossAmount != "" && !statusapi.SameDecimal(got.grossAmount, gross):
		return ErrStatusMismatch
	case got.transactionID != "" && got.transactionID != n.transactionID:
		return ErrStatusMismatch
	}
	return nil
}

// fetchStatus calls the GET status API for transactionID.
func (a *Adapter) fetchStatus(ctx context.Context, transactionID string) (statusReport, error) {
	// The id is a path segment; "." and ".." would move up the path once
	// a proxy or server cleans it. Midtrans's ids are UUIDs.
	if transactionID == "." || transactionID == ".." {
		return statusReport{}, ErrUnknownTransaction
	}
	u := *a.statusAPI
	u.Path = a.statusAPI.Path + "/v2/" + transactionID + "/status"
	u.RawPath = a.statusAPI.EscapedPath() + "/v2/" + url.PathEscape(transactionID) + "/status"

	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return statusReport{}, ErrStatusUnavailable
	}
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(a.serverKey+":")))
	req.Header.Set("Accept", "application/json")

	status, answer, err := a.status.Call(MaxStatusResponseBytes, ErrStatusUnavailable).Do(ctx, req)
	switch {
	case status == http.StatusNotFound:
		return statusReport{}, ErrUnknownTransaction
	case err != nil:
		return statusReport{}, err
	}
	return parseStatus(answer)
}

// parseStatus reads a 200 answer of the GET status API. Midtrans also
// answers some errors with HTTP 200 and the error's code in the body's
// status_code: "404" is an unknown transaction; any other answer without a
// transaction_status cannot confirm anything.
func parseStatus(answer []byte) (statusReport, error) {
	o, err := rawjson.Parse(answer)
	if err != nil {
		return statusReport{}, fmt.Errorf("%w (answer is not a JSON object)", ErrStatusUnavailable)
	}
	var r statusReport
	var ok bool
	r.status, ok, err = o.String("transaction_status")
	if err != nil || !ok || r.status == "" {
		if code, _, _ := o.Scalar("status_code"); code == "404" {
			return statusReport{}, ErrUnknownTransaction
		}
		return statusReport{}, fmt.Errorf("%w (answer has no transaction_status)", ErrStatusUnavailable)
	}
	var err1, err2, err3 error
	r.fraudStatus, _, err1 = o.String("fraud_status")
	r.transactionID, _, err2 = o.String("transaction_id")
	r.orderID, _, err3 = o.Scalar("order_id")
	var err4, err5 error
	r.grossAmount, _, err5 = o.Scalar("gross_amount")
	r.refunds, r.hasRefunds, err4 = parseRefunds(o)
	if errors.Join(err1, err2, err3, err4, err5) != nil {
		return statusReport{}, fmt.Errorf("%w (answer has malformed fields)", ErrStatusUnavailable)
	}
	return r, nil
}

// parseRefunds reads the answer's refunds array. ok is false when it is
// absent or null; an array whose elements are not objects, or whose
// refund_key or refund_amount is not a string (or number), is an error.
func parseRefunds(o *rawjson.Object) (refunds []refundEntry, ok bool, err error) {
	m, present, err := o.Get("refunds")
	if err != nil || !present || m.IsNull() {
		return nil, false, err
	}
	var elems []json.RawMessage
	if m.Value[0] != '[' {
		return nil, false, errors.New("refunds is not an array")
	}
	if err := json.Unmarshal(m.Value, &elems); err != nil {
		return nil, false, err
	}
	refunds = make([]refundEntry, 0, len(elems))
	for _, raw := range elems {
		e, err := rawjson.Parse(raw)
		if err != nil {
			return nil, false, err
		}
		var r refundEntry
		var err1, err2 error
		r.key, _, err1 = e.String("refund_key")
		r.amount, _, err2 = e.Scalar("refund_amount")
		if err := errors.Join(err1, err2); err != nil {
			return nil, false, err
		}
		refunds = append(refunds, r)
	}
	return refunds, true, nil
}
