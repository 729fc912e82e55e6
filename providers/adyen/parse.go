package adyen

import (
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
)

// Parse's errors. Each wraps providers.ErrMalformed.
var (
	// ErrNotJSON means the body is not a readable notification (see
	// ErrUnreadableBody), or has no items.
	ErrNotJSON = fmt.Errorf("%w: adyen: body is not a notification with items", providers.ErrMalformed)
	// ErrNoEventKey means an item's merchantAccountCode or pspReference is
	// missing or not a token without ":", or its success is neither "true"
	// nor "false".
	ErrNoEventKey = fmt.Errorf("%w: adyen: item has no usable event key", providers.ErrNoEventKey)
	// ErrInvalidEventType means an item's eventCode is missing or not a
	// token without ":".
	ErrInvalidEventType = fmt.Errorf("%w: adyen: item eventCode is invalid", providers.ErrNoEventKey)
)

// MaxFieldBytes is the longest merchantAccountCode, pspReference or
// eventCode accepted. Three of them, success and the separators, behind
// "adyen:", stay under the dedupe store's key limit.
const MaxFieldBytes = 120

// Parse derives one event per item, in the request's order
// (docs/contract.md, "Event keys" and "Batches (Adyen)"): Key is
// merchantAccountCode:pspReference:eventCode:success, Type is eventCode,
// and Fingerprint covers the item's signed fields (signedNames), which
// Adyen sends unchanged on every retry; the unsigned rest (eventDate,
// additionalData with its signature, which a key rotation changes) is left
// out. Each item's Body is {"live":<live>,"notificationItems":[<item>]}
// with the request's live value ("true" or "false", nothing else is read)
// and the item's bytes as sent, so that all the bodies together hold no
// more than the request's bytes and a fixed wrapper per item
// (TestForwardedBytes). Its errors wrap providers.ErrMalformed.
func (a *Adapter) Parse(d providers.Delivery) ([]providers.Item, error) {
	body := d.Body
	n, err := readNotification(body)
	if err != nil || len(n.items) == 0 {
		return nil, ErrNotJSON
	}
	out := make([]providers.Item, len(n.items))
	for i := range n.items {
		it := &n.items[i]
		ev, err := event(it)
		if err != nil {
			return nil, fmt.Errorf("%w (item %d of %d)", err, i+1, len(n.items))
		}
		out[i] = providers.Item{Event: ev, Body: n.itemBody(it)}
	}
	return out, nil
}

func event(it *item) (providers.Event, error) {
	f := &it.f
	if !isPart(f.merchant) || !isPart(f.psp) || (f.success != "true" && f.success != "false") {
		return providers.Event{}, ErrNoEventKey
	}
	if !isPart(f.eventCode) {
		return providers.Event{}, ErrInvalidEventType
	}
	fp, err := it.obj.Fingerprint(signedNames...)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	return providers.Event{
		Key:         f.merchant + ":" + f.psp + ":" + f.eventCode + ":" + f.success,
		Type:        f.eventCode,
		Fingerprint: fp,
	}, nil
}

// itemBody is the notification the core service receives for it.
func (n *notification) itemBody(it *item) []byte {
	const head, mid, tail = `{"live":`, `,"notificationItems":[`, `]}`
	b := make([]byte, 0, len(head)+len(n.live)+len(mid)+len(it.raw)+len(tail))
	b = append(b, head...)
	b = append(b, n.live...)
	b = append(b, mid...)
	b = append(b, it.raw...)
	return append(b, tail...)
}

// isPart reports whether s can be one part of a key: a token without ":".
func isPart(s string) bool {
	return providers.IsToken(s, MaxFieldBytes) && !strings.Contains(s, ":")
}
