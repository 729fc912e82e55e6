package midtrans

import (
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Parse's errors. Each wraps providers.ErrMalformed.
var (
	// ErrNotJSON means the body is not a JSON object with unique member
	// names.
	ErrNotJSON = fmt.Errorf("%w: midtrans: body is not a JSON object with unique member names", providers.ErrMalformed)
	// ErrNoEventKey means transaction_id or transaction_status is missing,
	// not a string, or not a usable token (see MaxFieldBytes).
	ErrNoEventKey = fmt.Errorf("%w: midtrans: no usable transaction_id and transaction_status", providers.ErrMalformed)
	// ErrInvalidField means fraud_status or refund_key is present but not a
	// string, or not a usable token.
	ErrInvalidField = fmt.Errorf("%w: midtrans: fraud_status or refund_key is invalid", providers.ErrMalformed)
)

// MaxFieldBytes is the longest transaction_id, transaction_status,
// fraud_status or refund_key Parse accepts. Four of them and their
// separators, behind "midtrans:", stay under the dedupe store's key limit.
const MaxFieldBytes = 120

// fingerprintFields are what Midtrans keeps identical across its retries of
// one notification: the event's identity, the signed fields, and the amounts.
// Left out on purpose: signature_key (a function of fields already here),
// status_message, the timestamps and the per-method details, none of which
// say anything the event key does not, and any field Midtrans adds later
// ("always expect new fields will be added to the notification body").
//
// Changing this list changes every stored fingerprint: retries of events in
// flight across the deploy would get 422.
var fingerprintFields = []string{
	"transaction_id", "transaction_status", "fraud_status", "refund_key",
	"order_id", "status_code", "gross_amount", "currency", "payment_type", "refund_amount",
}

// notification is the part of a body that names its event.
type notification struct {
	transactionID string
	status        string
	fraudStatus   string // "" when absent
	refundKey     string // "" when absent
}

// Parse derives the event from a verified body: Key is
// transaction_id:transaction_status, then :fraud_status when present, then
// :refund_key when present (each status change of a transaction, and each
// refund, is its own event); Type is transaction_status. An empty or null
// fraud_status or refund_key counts as absent. Its errors wrap
// providers.ErrMalformed.
func (a *Adapter) Parse(body []byte) (providers.Event, error) {
	o, err := rawjson.Parse(body)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	n, err := readNotification(o)
	if err != nil {
		return providers.Event{}, err
	}
	fp, err := o.Fingerprint(fingerprintFields...)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	return providers.Event{Key: n.key(), Type: n.status, Fingerprint: fp}, nil
}

func (n notification) key() string {
	parts := []string{n.transactionID, n.status}
	if n.fraudStatus != "" {
		parts = append(parts, n.fraudStatus)
	}
	if n.refundKey != "" {
		parts = append(parts, n.refundKey)
	}
	return strings.Join(parts, ":")
}

func readNotification(o *rawjson.Object) (notification, error) {
	var n notification
	var ok bool
	var err error
	// The fields Midtrans defines never contain ":", which keeps the key's
	// parts apart; refund_key is the merchant's and is taken as it is.
	if n.transactionID, ok, err = o.String("transaction_id"); err != nil || !ok || !isPart(n.transactionID) {
		return n, ErrNoEventKey
	}
	if n.status, ok, err = o.String("transaction_status"); err != nil || !ok || !isPart(n.status) {
		return n, ErrNoEventKey
	}
	if n.fraudStatus, _, err = o.String("fraud_status"); err != nil || (n.fraudStatus != "" && !isPart(n.fraudStatus)) {
		return n, ErrInvalidField
	}
	if n.refundKey, _, err = o.String("refund_key"); err != nil || (n.refundKey != "" && !providers.IsToken(n.refundKey, MaxFieldBytes)) {
		return n, ErrInvalidField
	}
	return n, nil
}

// isPart reports whether s can be a Midtrans-defined part of the event key.
func isPart(s string) bool {
	return providers.IsToken(s, MaxFieldBytes) && !strings.Contains(s, ":")
}
