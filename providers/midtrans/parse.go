package midtrans

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Parse's errors. Each wraps providers.ErrMalformed.
var (
	// ErrNotJSON means the body is not a JSON object with unique member
	// names (compared case-insensitively, with Unicode folding, at any
	// depth). A field Parse reads that the body spells only in another case
	// ("Fraud_Status") is refused too, with the error for that field.
	ErrNotJSON = fmt.Errorf("%w: midtrans: body is not a JSON object with unique member names", providers.ErrMalformed)
	// ErrNoEventKey means transaction_id or transaction_status is missing,
	// not a string, or not a usable token (see MaxFieldBytes).
	ErrNoEventKey = fmt.Errorf("%w: midtrans: no usable transaction_id and transaction_status", providers.ErrNoEventKey)
	// ErrInvalidField means fraud_status is present but not a string or not
	// a usable token, or refund_key is present but not a string.
	ErrInvalidField = fmt.Errorf("%w: midtrans: fraud_status or refund_key is invalid", providers.ErrMalformed)
)

// MaxFieldBytes is the longest transaction_id, transaction_status,
// fraud_status or refund_key Parse puts in a key as it is. Four of them and
// their separators, behind "midtrans:", stay under the dedupe store's key
// limit. A longer refund_key is replaced by its digest (see refundKeyPart).
const MaxFieldBytes = 120

// refundDigestPrefix starts the key part that stands for a refund_key that
// cannot go into a key as it is: "h" and the first 32 hex digits (128 bits)
// of the SHA-256 of the refund_key's decoded value.
const refundDigestPrefix = "h"

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
	// refundKey is refund_key as sent, decoded; "" when absent.
	refundKey string
}

// event derives the event from a verified body: Key is
// transaction_id:transaction_status, then :fraud_status when present, then
// :refund_key when present (each status change of a transaction, and each
// refund, is its own event); Type is transaction_status. An empty or null
// fraud_status or refund_key counts as absent. A refund_key that is not a
// short printable token without ":" goes into the key as its digest (see
// refundKeyPart). Its errors wrap providers.ErrMalformed.
func (a *Adapter) event(body []byte) (providers.Event, error) {
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
		parts = append(parts, refundKeyPart(n.refundKey))
	}
	return strings.Join(parts, ":")
}

// refundKeyPart is the key part for refund_key k. The merchant chooses
// refund_key when it asks for the refund (Midtrans's refund API takes any
// string), so it may hold spaces, non-ASCII or be long; refusing such a
// notification would lose a genuine refund for good, since every retry
// carries the same refund_key. A plain refund key (see isPlainRefundKey)
// goes in as it is (docs/contract.md: ":refund_key"); anything else goes in as
// refundDigestPrefix + 32 hex digits of its SHA-256, which is a token, and
// the same on every retry because it depends on refund_key alone.
func refundKeyPart(k string) string {
	if isPlainRefundKey(k) {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	return refundDigestPrefix + hex.EncodeToString(sum[:16])
}

// isPlainRefundKey reports whether refund_key k can go into the key as it
// is without being read as something else:
//
//   - a printable token up to MaxFieldBytes, as every key part;
//   - without ":", since the part before refund_key (fraud_status) is
//     optional: fraud_status "accept" with refund_key "R1" and no
//     fraud_status with refund_key "accept:R1" would both end
//     ":accept:R1", and the second, another refund, would get 422;
//   - not shaped like a digest (refundDigestPrefix and 32 lowercase hex
//     digits), which would stand for another refund_key.
//
// Every other refund_key is digested, and two digests collide only if
// SHA-256 does.
func isPlainRefundKey(k string) bool {
	return providers.IsToken(k, MaxFieldBytes) && !strings.Contains(k, ":") && !isDigestShaped(k)
}

func isDigestShaped(k string) bool {
	if len(k) != len(refundDigestPrefix)+32 || !strings.HasPrefix(k, refundDigestPrefix) {
		return false
	}
	for _, c := range []byte(k[len(refundDigestPrefix):]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func readNotification(o *rawjson.Object) (notification, error) {
	var n notification
	var ok bool
	var err error
	// The fields Midtrans defines never contain ":", which keeps the key's
	// parts apart; refund_key is the merchant's and is taken as it is when
	// that cannot be ambiguous, else as its digest (see refundKeyPart).
	if n.transactionID, ok, err = o.String("transaction_id"); err != nil || !ok || !isPart(n.transactionID) {
		return n, ErrNoEventKey
	}
	if n.status, ok, err = o.String("transaction_status"); err != nil || !ok || !isPart(n.status) {
		return n, ErrNoEventKey
	}
	if n.fraudStatus, _, err = o.String("fraud_status"); err != nil || (n.fraudStatus != "" && !isPart(n.fraudStatus)) {
		return n, ErrInvalidField
	}
	if n.refundKey, _, err = o.String("refund_key"); err != nil {
		return n, ErrInvalidField
	}
	return n, nil
}

// isPart reports whether s can be a Midtrans-defined part of the event key.
func isPart(s string) bool {
	return providers.IsToken(s, MaxFieldBytes) && !strings.Contains(s, ":")
}
