package braintree

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
)

// Name is the adapter's route segment and event key prefix.
const Name = "braintree"

// ContentType is how Braintree posts its notifications; Sign sets it so
// that `webhookd replay` sends fixtures the same way.
const ContentType = "application/x-www-form-urlencoded"

// The form fields Braintree posts.
const (
	FieldSignature = "bt_signature"
	FieldPayload   = "bt_payload"
)

// keyNoun is what the adapter calls one configured secret in messages.
const keyNoun = "key pair"

// KeyPair is one Braintree API key: the public key that names its
// signature in bt_signature, and the private key whose SHA-1 digest keys
// the HMAC.
type KeyPair struct {
	Public, Private string
}

// ParseKeyPair reads one "public_key:private_key" item of
// WEBHOOKD_BRAINTREE_KEYS, split at the first ":". The public key must be
// non-empty and hold none of ":", "|" and "&" (they delimit bt_signature's
// pairs); the private key must be non-empty. The error never quotes the
// private key.
func ParseKeyPair(s string) (KeyPair, error) {
	pub, priv, ok := strings.Cut(s, ":")
	switch {
	case !ok:
		return KeyPair{}, fmt.Errorf("not public_key:private_key (no \":\")")
	case pub == "" || strings.ContainsAny(pub, "|&"):
		return KeyPair{}, fmt.Errorf("the public key is empty or holds \"|\" or \"&\"")
	case priv == "":
		return KeyPair{}, fmt.Errorf("the private key is empty")
	}
	return KeyPair{Public: pub, Private: priv}, nil
}

// Signature returns the hex HMAC-SHA1 of msg keyed with the SHA-1 digest
// of privateKey: the signature of one bt_signature pair, and the SDKs'
// answer to a bt_challenge.
func Signature(privateKey string, msg []byte) string {
	key := sha1.Sum([]byte(privateKey))
	m := hmac.New(sha1.New, key[:])
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil))
}

// Adapter verifies and parses Braintree webhook notifications. Build one
// with New; an Adapter is safe for concurrent use. The zero value rejects
// every delivery.
type Adapter struct {
	pairs []KeyPair
	// keys holds SHA-1(private key) of each pair, in order.
	keys [][sha1.Size]byte
}

var _ providers.Provider = (*Adapter)(nil)

// New returns an Adapter that accepts notifications signed with any of
// keys, each "public_key:private_key" (Sign uses the first). It refuses an
// empty list, an empty item, an item with surrounding white space, one
// that ParseKeyPair refuses and a public key given twice.
func New(keys []string) (*Adapter, error) {
	if err := adapter.Check(Name, keyNoun, keys); err != nil {
		return nil, err
	}
	a := &Adapter{}
	seen := map[string]bool{}
	for i, s := range keys {
		kp, err := ParseKeyPair(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %s %d of %d: %w", Name, keyNoun, i+1, len(keys), err)
		}
		if seen[kp.Public] {
			// Two private keys under one public key: the pair a signature
			// names would be ambiguous.
			return nil, fmt.Errorf("%s: %s %d of %d: its public key is given twice", Name, keyNoun, i+1, len(keys))
		}
		seen[kp.Public] = true
		a.pairs = append(a.pairs, kp)
		a.keys = append(a.keys, sha1.Sum([]byte(kp.Private)))
	}
	return a, nil
}

// Name returns "braintree".
func (a *Adapter) Name() string { return Name }

// Parse derives the delivery's one event from its body (see event).
func (a *Adapter) Parse(d providers.Delivery) ([]providers.Item, error) {
	return providers.One(d, event)
}
