package paypal

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// transmissions remembers, for each verified transmission id, the SHA-256
// of the body it was verified with, until the end of the tolerance window
// of its transmission time, keeping at most max of them (the least
// recently seen goes first). PayPal signs the body only through CRC-32, so
// a second body under one signed transmission id is a forgery that matches
// the checksum: this is what refuses it. Ids and bodies are kept as
// digests, so an entry has a fixed size whatever the headers hold.
type transmissions struct {
	mu      sync.Mutex
	max     int
	byID    map[[sha256.Size]byte]*list.Element
	recency *list.List // of *seenTransmission, most recent first
}

type seenTransmission struct {
	id, body [sha256.Size]byte
	until    time.Time
}

func newTransmissions(max int) *transmissions {
	if max <= 0 {
		max = DefaultTransmissionCache
	}
	return &transmissions{max: max, byID: map[[sha256.Size]byte]*list.Element{}, recency: list.New()}
}

// bind records that transmission id carried body, remembered until until,
// and reports false when id is remembered with another body. The first
// body seen wins: a later one, genuine or not, is refused until the entry
// expires or is evicted.
func (t *transmissions) bind(id string, body []byte, now, until time.Time) bool {
	key := sha256.Sum256([]byte(id))
	digest := sha256.Sum256(body)
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.byID[key]; ok {
		s := e.Value.(*seenTransmission)
		if now.Before(s.until) {
			t.recency.MoveToFront(e)
			return s.body == digest
		}
		// Expired: the window refuses the transmission's time anyway
		// unless the clock went back; start afresh.
		t.recency.Remove(e)
		delete(t.byID, key)
	}
	for t.recency.Len() >= t.max {
		last := t.recency.Back()
		delete(t.byID, last.Value.(*seenTransmission).id)
		t.recency.Remove(last)
	}
	t.byID[key] = t.recency.PushFront(&seenTransmission{id: key, body: digest, until: until})
	return true
}
