package midtrans

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
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

// fraudDigestPrefix starts the key part that stands for a fraud_status
// other than the ones Midtrans documents (fraudStatuses): "f" and the first
// 32 hex digits of its SHA-256.
const fraudDigestPrefix = "f"

// fraudStatuses are the fraud_status values Midtrans documents; each goes
// into a key as it is.
var fraudStatuses = []string{"accept", "challenge", "deny"}

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

// key joins the parts, which hold no ":". fraud_status and refund_key are
// both optional, so a three-part key's last part must say which it is:
// a fraud part is a documented status or fraudDigestPrefix and a digest,
// and a refund_key alone that would read as one goes in as its digest.
// Without that, fraud_status "accept" with no refund_key and refund_key
// "accept" with no fraud_status shared one key, and the second, another
// event, would get 422.
func (n notification) key() string {
	parts := []string{n.transactionID, n.status}
	if n.fraudStatus != "" {
		parts = append(parts, fraudPart(n.fraudStatus))
	}
	if n.refundKey != "" {
		parts = append(parts, refundKeyPart(n.refundKey, n.fraudStatus == ""))
	}
	return strings.Join(parts, ":")
}

// fraudPart is the key part for fraud_status f: f itself when Midtrans
// documents it, else its digest, so that no fraud part reads as a plain
// refund_key.
func fraudPart(f string) string {
	if slices.Contains(fraudStatuses, f) {
		return f
	}
	return fraudDigestPrefix + digest(f)
}

// digest is the first 32 hex digits of the SHA-256 of s.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// refundKeyPart is the key part for refund_key k. The merchant chooses
// refund_key when it asks for the refund (Midtrans's refund API takes any
// string), so it may hold spaces, non-ASCII or be long; refusing such a
// notification would lose a genuine refund for good, since every retry
// carries the same refund_key. A plain refund key (see isPlainRefundKey)
// goes in as it is (docs/contract.md: ":refund_key"); anything else goes in as
// refundDigestPrefix + 32 hex digits of its SHA-256, which is a token, and
// the same on every retry because it depends on refund_key alone.
// A refund_key alone (no fraud_status before it) is also digested when it
// reads as a fraud part (see key).
func refundKeyPart(k string, alone bool) string {
	if isPlainRefundKey(k) && !(alone && isFraudPart(k)) {
		return k
	}
	return refundDigestPrefix + digest(k)
}

// isFraudPart reports whether k is shaped like what fraudPart returns.
func isFraudPart(k string) bool {
	return slices.Contains(fraudStatuses, k) || isDigestShaped(k, fraudDigestPrefix)
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
	return providers.IsToken(k, MaxFieldBytes) && !strings.Contains(k, ":") && !isDigestShaped(k, refundDigestPrefix)
}

// isDigestShaped reports whether k is prefix and 32 lowercase hex digits.
func isDigestShaped(k, prefix string) bool {
	if len(k) != len(prefix)+32 || !strings.HasPrefix(k, prefix) {
		return false
	}
	for _, c := range []byte(k[len(prefix):]) {
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
