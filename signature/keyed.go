package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"sync"
)

// HMACKey computes HMAC-SHA256 under one fixed key, as HMACSHA256 does, but
// reuses its hash states from one call to the next. hmac.New allocates two
// SHA-256 states and the padded key (about ten objects, a kilobyte) each
// time; an adapter verifies every delivery under the same few secrets, so it
// makes one HMACKey per secret when it is built and keeps that cost off the
// delivery path. It is safe for concurrent use.
type HMACKey struct {
	key  []byte
	pool sync.Pool // of hash.Hash keyed with key, reset before reuse
}

// NewHMACKeys returns one HMACKey per key, in the same order.
func NewHMACKeys(keys [][]byte) []*HMACKey {
	out := make([]*HMACKey, len(keys))
	for i, k := range keys {
		out[i] = NewHMACKey(k)
	}
	return out
}

// NewHMACKey returns an HMACKey for key. The key is copied.
func NewHMACKey(key []byte) *HMACKey {
	k := &HMACKey{key: append([]byte(nil), key...)}
	k.pool.New = func() any { return &keyedState{mac: hmac.New(sha256.New, k.key)} }
	return k
}

// keyedState is what the pool holds: a keyed HMAC and room for its sum (a
// buffer handed to hash.Hash.Sum escapes, so the caller's could not be
// used without allocating).
type keyedState struct {
	mac hash.Hash
	sum [sha256.Size]byte
}

// Sum returns the HMAC-SHA256 under the key of the concatenation of the msg
// parts, as HMACSHA256 does, without allocating once the pool holds a
// state.
func (k *HMACKey) Sum(msg ...[]byte) [sha256.Size]byte {
	st := k.pool.Get().(*keyedState)
	for _, part := range msg {
		st.mac.Write(part) // hash.Hash.Write never returns an error.
	}
	out := [sha256.Size]byte(st.mac.Sum(st.sum[:0]))
	// Reset returns the state to "key written, nothing else", whatever the
	// last call wrote: no message of one call reaches the next.
	st.mac.Reset()
	k.pool.Put(st)
	return out
}
