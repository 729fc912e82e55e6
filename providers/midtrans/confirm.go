package midtrans

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Confirm's errors. The first two wrap providers.ErrMismatch (the receiver
// answers 401 and forwards nothing), the last wraps providers.ErrUnavailable
// (503, so that Midtrans retries).
var (
	// ErrStatusMismatch means the GET status API reports a different
	// transaction_status, fraud_status or order_id than the notification.
	ErrStatusMismatch = fmt.Errorf("%w: midtrans: status API reports a different status", providers.ErrMismatch)
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
//   - the same transaction_id, when the answer has one.
//
// Midtrans's API reports only the current status, so a notification that a
// later status change has already superseded (pending, then settlement a
// second later) no longer matches and is refused; the later change has its
// own notification.
//
// Without WithStatusCheck, Confirm returns nil at once. Its errors wrap
// providers.ErrMismatch or providers.ErrUnavailable.
func (a *Adapter) Confirm(ctx context.Context, _ providers.Event, body []byte) error {
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
	got, err := a.fetchStatus(ctx, n.transactionID)
	if err != nil {
		return err
	}
	return compare(n, orderID, got)
}

// statusReport is what Confirm reads from a GET status answer.
type statusReport struct {
	transactionID string
	status        string
	fraudStatus   string
	orderID       string
}

func compare(n notification, orderID string, got statusReport) error {
	switch {
	case got.status != n.status:
		return ErrStatusMismatch
	case n.fraudStatus != "" && got.fraudStatus != n.fraudStatus:
		return ErrStatusMismatch
	case n.fraudStatus == "" && got.fraudStatus != "" && got.fraudStatus != "accept":
		return ErrStatusMismatch
	case got.orderID != orderID:
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

	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return statusReport{}, ErrStatusUnavailable
	}
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(a.serverKey+":")))
	req.Header.Set("Accept", "application/json")

	resp, err := a.client.Do(req)
	if err != nil {
		// Not wrapped: a transport error quotes the URL, and the message
		// ends up in the answer to Midtrans.
		if errors.Is(err, context.DeadlineExceeded) {
			return statusReport{}, fmt.Errorf("%w (timed out after %s)", ErrStatusUnavailable, a.timeout)
		}
		return statusReport{}, fmt.Errorf("%w (request failed)", ErrStatusUnavailable)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxStatusResponseBytes+1))
	// Drain a little of what is left so the connection can be reused.
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return statusReport{}, ErrUnknownTransaction
	case resp.StatusCode != http.StatusOK:
		return statusReport{}, fmt.Errorf("%w (HTTP %d)", ErrStatusUnavailable, resp.StatusCode)
	case err != nil:
		return statusReport{}, fmt.Errorf("%w (answer unreadable)", ErrStatusUnavailable)
	case len(answer) > MaxStatusResponseBytes:
		return statusReport{}, fmt.Errorf("%w (answer larger than %d bytes)", ErrStatusUnavailable, MaxStatusResponseBytes)
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
	if errors.Join(err1, err2, err3) != nil {
		return statusReport{}, fmt.Errorf("%w (answer has malformed fields)", ErrStatusUnavailable)
	}
	return r, nil
}
