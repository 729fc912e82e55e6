package adyen

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// MaxItems is the most notificationItems one request may carry. Adyen sends
// one, or a few in a batch; the bound keeps one request's store calls and
// forwards finite whatever the body limit.
const MaxItems = 100

// errNotNotification means the body is not a notification webhookd can
// read: Verify answers it as unauthenticated, Parse as malformed.
var errNotNotification = errors.New("adyen: not a notification")

// errLive means the body's live member is neither "true" nor "false"
// (Verify's ErrLive).
var errLive = errors.New("adyen: live is not true or false")

// notification is one parsed request.
type notification struct {
	// live is the request's live member, exactly as sent: "true" or
	// "false" with its quotes (isLive), since it is unsigned and copied
	// into every item's forwarded body.
	live  json.RawMessage
	items []item
}

// item is one element of notificationItems.
type item struct {
	// raw is the element, {"NotificationRequestItem":{...}}, exactly as
	// sent, and at its offset in the body.
	raw []byte
	at  int
	// obj is the NotificationRequestItem object, at objAt in the body.
	obj   *rawjson.Object
	objAt int
	f     fields
}

// fields are an item's signed fields as the signature covers them (absent
// ones empty), and its signature.
type fields struct {
	psp, original, merchant, reference, value, currency, eventCode, success string
	signature                                                               string
}

// signedNames are the item members the signature covers, the amount with
// its value and currency.
var signedNames = []string{"pspReference", "originalReference", "merchantAccountCode", "merchantReference", "amount", "eventCode", "success"}

// signedText is the string Adyen signs for an item (GetDataToSign in
// Adyen's Go library).
func (f *fields) signedText() []byte {
	parts := [...]string{f.psp, f.original, f.merchant, f.reference, f.value, f.currency, f.eventCode, f.success}
	n := len(parts) - 1
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	for i, p := range parts {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, p...)
	}
	return b
}

// readNotification parses body: a JSON object with unique member names (see
// rawjson), a live member and a notificationItems array of objects each
// holding a NotificationRequestItem object, whose signed fields are strings
// (amount.value an integer) or absent.
func readNotification(body []byte) (*notification, error) {
	o, err := rawjson.Parse(body)
	if err != nil {
		return nil, errNotNotification
	}
	live, ok, err := o.Get("live")
	if err != nil || !ok {
		return nil, errNotNotification
	}
	if !isLive(live.Value) {
		return nil, errLive
	}
	list, ok, err := o.Elements("notificationItems")
	if err != nil || !ok {
		return nil, errNotNotification
	}
	n := &notification{live: live.Value}
	for i, raw := range list {
		if i == MaxItems {
			return nil, errNotNotification
		}
		it, err := readItem(raw)
		if err != nil {
			return nil, err
		}
		n.items = append(n.items, it)
	}
	return n, nil
}

// isLive reports whether raw, a member's value as sent, is one of the two
// strings Adyen sends for live (its libraries model live as a string).
// Escaped spellings and booleans are refused: one value, one spelling.
func isLive(raw []byte) bool {
	return string(raw) == `"true"` || string(raw) == `"false"`
}

// readItem parses one element of notificationItems, whose Start is its
// offset in the body.
func readItem(raw rawjson.Member) (item, error) {
	elem, err := raw.Object() // validated with the body
	if err != nil {
		return item{}, errNotNotification
	}
	m, ok, err := elem.Get("NotificationRequestItem")
	// Nothing beside it: the element is forwarded whole, and a sibling
	// would reach the core service unsigned.
	if err != nil || !ok || elem.Len() != 1 {
		return item{}, errNotNotification
	}
	obj, err := m.Object() // null or not an object: an error
	if err != nil {
		return item{}, errNotNotification
	}
	it := item{raw: raw.Value, at: raw.Start, obj: obj, objAt: raw.Start + m.Start}
	for _, s := range []struct {
		name string
		to   *string
	}{
		{"pspReference", &it.f.psp}, {"originalReference", &it.f.original}, {"merchantAccountCode", &it.f.merchant},
		{"merchantReference", &it.f.reference}, {"eventCode", &it.f.eventCode}, {"success", &it.f.success},
	} {
		if *s.to, _, err = obj.String(s.name); err != nil {
			return item{}, errNotNotification
		}
	}
	if amount, ok, err := obj.Object("amount"); err != nil {
		return item{}, errNotNotification
	} else if ok {
		if it.f.currency, _, err = amount.String("currency"); err != nil {
			return item{}, errNotNotification
		}
		v, ok, err := amount.Get("value")
		if err != nil {
			return item{}, errNotNotification
		}
		if ok && !v.IsNull() {
			// An integer in minor units, written as Adyen's library
			// writes it (strconv.Itoa): never a float.
			// One spelling per value: "-0" is refused, as 1e3 and
			// 1000.0 are.
			n, err := strconv.ParseInt(string(v.Value), 10, 64)
			if err != nil || strconv.FormatInt(n, 10) != string(v.Value) {
				return item{}, errNotNotification
			}
			it.f.value = string(v.Value)
		}
	}
	if ad, ok, err := obj.Object("additionalData"); err != nil {
		return item{}, errNotNotification
	} else if ok {
		if it.f.signature, _, err = ad.String("hmacSignature"); err != nil {
			return item{}, errNotNotification
		}
	}
	return it, nil
}
