package signature

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// This file is the Standard Webhooks v1 scheme
// (https://www.standardwebhooks.com/, also what Svix sends) as webhookd
// signs its own forwards: webhookverify signs and checks them with it.
// Deliveries from Standard Webhooks senders are read by the built-in spec
// providers/spec/builtin/standard.yaml, which describes the same scheme;
// both are held to the reference library's vector. Header names, secret
// lists and error classes belong to the callers; the bytes that are
// signed, the key encoding, the signature list and the two-sided timestamp
// window of the forwards are decided here only.

// WebhookSecretPrefix marks a Standard Webhooks secret: "whsec_" followed by
// the standard base64 encoding of the HMAC key.
const WebhookSecretPrefix = "whsec_"

// Errors of the Standard Webhooks helpers. None of them quotes a secret, a
// signature or a body.
var (
	// ErrWebhookSecret means a secret is not whsec_ followed by a
	// non-empty standard base64 key.
	ErrWebhookSecret = errors.New("signature: not a whsec_ secret with a standard base64 key")
	// ErrInvalidTimestamp means a webhook-timestamp is not unix seconds in
	// plain decimal digits.
	ErrInvalidTimestamp = errors.New("signature: timestamp is not unix seconds")
	// ErrTooNew means a signed timestamp is further ahead of the receiver's
	// clock than the tolerance.
	ErrTooNew = errors.New("signature: timestamp further ahead than tolerance")
)

// DecodeWebhookSecret returns the HMAC key of a Standard Webhooks secret:
// the standard base64 decoding of what follows the whsec_ prefix. It
// returns an error wrapping ErrWebhookSecret when the prefix is missing, the
// rest is not base64, or the key is empty.
func DecodeWebhookSecret(secret string) ([]byte, error) {
	rest, ok := strings.CutPrefix(secret, WebhookSecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: no %s prefix", ErrWebhookSecret, WebhookSecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		// The decoder's error quotes an offset into the secret; say less.
		return nil, fmt.Errorf("%w: the part after %s is not standard base64", ErrWebhookSecret, WebhookSecretPrefix)
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("%w: empty key after %s", ErrWebhookSecret, WebhookSecretPrefix)
	}
	return key, nil
}

// CheckWebhookTimestamp checks a webhook-timestamp header value: plain
// decimal unix seconds (no sign, at most 19 digits), at most tolerance
// before now and at most tolerance after it, since the reference libraries
// refuse both. It returns nil or an error wrapping ErrInvalidTimestamp,
// ErrTooOld, ErrTooNew or ErrInvalidTolerance (a tolerance that is not
// positive fails closed).
func CheckWebhookTimestamp(ts string, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		return ErrInvalidTolerance
	}
	// Digits only: ParseInt alone would also take "+12" or "-0".
	if ts == "" || len(ts) > 19 || strings.TrimLeft(ts, "0123456789") != "" {
		return ErrInvalidTimestamp
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrInvalidTimestamp
	}
	// Sub saturates instead of overflowing, so an absurd value still
	// compares as too old or too new.
	at := time.Unix(secs, 0)
	if age := now.Sub(at); age > tolerance {
		return fmt.Errorf("%w (age %s, tolerance %s)", ErrTooOld, age.Round(time.Second), tolerance)
	}
	if ahead := at.Sub(now); ahead > tolerance {
		return fmt.Errorf("%w (ahead by %s, tolerance %s)", ErrTooNew, ahead.Round(time.Second), tolerance)
	}
	return nil
}

// WebhookMAC returns the raw v1 signature of a message: HMAC-SHA256 under
// key of id, ".", timestamp (the header's text, as sent), "." and the raw
// body. The body is hashed in place, not copied.
func WebhookMAC(key []byte, id, timestamp string, body []byte) []byte {
	return HMACSHA256(key, []byte(id), []byte("."), []byte(timestamp), []byte("."), body)
}

// WebhookSignatures returns a webhook-signature header value: one
// "v1,<base64 MAC>" per key, in the order given, separated by spaces. With
// the new and the old key during a rotation, a receiver holding either
// accepts the message.
func WebhookSignatures(keys [][]byte, id, timestamp string, body []byte) string {
	sigs := make([]string, len(keys))
	for i, key := range keys {
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(WebhookMAC(key, id, timestamp, body))
	}
	return strings.Join(sigs, " ")
}

// MatchWebhookSignature reports whether any v1 signature in list, a
// space-separated webhook-signature value, is the MAC of id, timestamp and
// body under any of keys. Entries of other versions (v1a is the asymmetric
// scheme) and entries that are not base64 are skipped, as the specification
// asks, so a sender may add them. Each key's MAC is computed once and
// compared in constant time; the caller bounds the length of list.
func MatchWebhookSignature(list string, keys [][]byte, id, timestamp string, body []byte) bool {
	var want [][]byte
	for _, candidate := range strings.Fields(list) {
		version, encoded, ok := strings.Cut(candidate, ",")
		if !ok || version != "v1" {
			continue
		}
		// Strict: a signature has one spelling. The lenient decoder ignores
		// the unused bits of the last character, so "…1OE=" and "…1OG="
		// would both pass for one MAC (found by fuzzing; providers/spec's
		// FuzzStandardVerify keeps the input among its seeds).
		got, err := base64.StdEncoding.Strict().DecodeString(encoded)
		if err != nil {
			continue
		}
		if want == nil {
			want = make([][]byte, len(keys))
			for i, key := range keys {
				want[i] = WebhookMAC(key, id, timestamp, body)
			}
		}
		for _, w := range want {
			if Equal(got, w) {
				return true
			}
		}
	}
	return false
}
