package braintree_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/braintree"
)

// The keys of the official SDKs' unit tests (braintree_node
// test/spec_helper.js, braintree_python tests/test_helper.py).
const (
	sdkPublic  = "integration_public_key"
	sdkPrivate = "integration_private_key"
	sdkKeys    = sdkPublic + ":" + sdkPrivate
)

// The SDKs' one fixed vector: the answer to a bt_challenge, the same
// HMAC-SHA1 keyed by SHA-1(private key) that signs a payload.
// braintree/braintree_node @ 7a9270aaf31eb87819add64a768652243f90007c,
// test/unit/braintree/webhook_notification_gateway_spec.js ("creates a
// verification string for the challenge"); the same in
// braintree/braintree_python @ 80b03f49e8923e30bdaeeace2acacfcfa7a517cb,
// tests/unit/test_webhooks.py
// (test_verify_returns_a_correct_challenge_response).
const (
	sdkChallenge = "20f9f8ed05f77439fe955c977e4c8a53"
	sdkAnswer    = "integration_public_key|d9b899556c966b3f06945ec21311865d35df3ce4"
)

// selfPayload is a notification signed with the SDK's keys by the
// formula, not published by Braintree (the SDKs sign fresh, timestamped
// payloads): docs/providers/braintree.md, "Example".
const (
	selfPayload = "PG5vdGlmaWNhdGlvbj48dGltZXN0YW1wIHR5cGU9ImRhdGV0aW1lIj4yMDI0LTAxLTAxVDAwOjAw\n" +
		"OjAwWjwvdGltZXN0YW1wPjxraW5kPmNoZWNrPC9raW5kPjxzdWJqZWN0PjxjaGVjayB0eXBlPSJi\n" +
		"b29sZWFuIj50cnVlPC9jaGVjaz48L3N1YmplY3Q+PC9ub3RpZmljYXRpb24+\n"
	selfSignature = "integration_public_key|f14606926e0f2db57f428876e8bbb44fe7e38d07"
	// selfKey is "check:" + the SHA-256 of the decoded XML, computed with
	// Python's hashlib.
	selfKey = "check:89d521904ba4669904b7d82c491fb80ae616f5f715cf59f3e9aaabf3f96d38eb"
)

func form(sig, payload string) []byte {
	return []byte(braintree.FieldSignature + "=" + url.QueryEscape(sig) + "&" + braintree.FieldPayload + "=" + url.QueryEscape(payload))
}

func newAdapter(t testing.TB, keys ...string) *braintree.Adapter {
	t.Helper()
	a, err := braintree.New(keys)
	require.NoError(t, err)
	return a
}

func TestSignatureIsTheSDKsChallengeAnswer(t *testing.T) {
	require.Equal(t, sdkAnswer, sdkPublic+"|"+braintree.Signature(sdkPrivate, []byte(sdkChallenge)))
}

// TestSDKVectorVerifies: the challenge and its answer, posted as a
// notification, pass Verify (the text is within the payload's alphabet),
// and then are 400: authentic, but not a notification.
func TestSDKVectorVerifies(t *testing.T) {
	a := newAdapter(t, "other_public_key:other_private_key", sdkKeys)
	d := providers.Delivery{Body: form(sdkAnswer, sdkChallenge)}
	require.NoError(t, a.Verify(context.Background(), d))
	_, err := a.Parse(d)
	require.ErrorIs(t, err, braintree.ErrNotNotification)
	require.ErrorIs(t, err, providers.ErrMalformed)
}

func TestSelfDerivedNotification(t *testing.T) {
	a := newAdapter(t, sdkKeys)
	d := providers.Delivery{Body: form(selfSignature, selfPayload)}
	require.NoError(t, a.Verify(context.Background(), d))
	items, err := a.Parse(d)
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, "check", items[0].Type)
	require.Equal(t, selfKey, items[0].Key)
	require.Equal(t, d.Body, items[0].Body)
}

func TestVerify(t *testing.T) {
	sig := func(payload string) string { return sdkPublic + "|" + braintree.Signature(sdkPrivate, []byte(payload)) }
	// The SDKs accept the signature of the payload with a line feed
	// appended: braintree_node posts one, and a framework may strip it.
	stripped := strings.TrimSuffix(selfPayload, "\n")
	tests := []struct {
		name string
		body []byte
		want error // nil: verifies
	}{
		{"as signed", form(selfSignature, selfPayload), nil},
		{"final line feed stripped in transit", form(selfSignature, stripped), nil},
		{"signed without, posted without", form(sig(stripped), stripped), nil},
		{"another merchant's pair first", form("their_public_key|"+strings.Repeat("0", 40)+"&"+selfSignature, selfPayload), nil},
		{"fields in the other order", []byte(braintree.FieldPayload + "=" + url.QueryEscape(selfPayload) + "&" + braintree.FieldSignature + "=" + url.QueryEscape(selfSignature)), nil},
		// As the SDKs pick it, the first pair naming the key is the one
		// checked, so a bt_signature repeating it costs one check.
		{"our key's first pair wrong, a later one right", form(sdkPublic+"|"+strings.Repeat("0", 40)+"&"+selfSignature, selfPayload), braintree.ErrNoValidSignature},
		{"payload changed", form(selfSignature, "A"+selfPayload[1:]), braintree.ErrNoValidSignature},
		{"two line feeds appended", form(selfSignature, selfPayload+"\n"), braintree.ErrNoValidSignature},
		{"signature upper-case", form(strings.ToUpper(selfSignature[:len(sdkPublic)+1])+strings.ToUpper(selfSignature[len(sdkPublic)+1:]), selfPayload), braintree.ErrUnknownPublicKey},
		{"hex upper-case", form(sdkPublic+"|"+strings.ToUpper(selfSignature[len(sdkPublic)+1:]), selfPayload), braintree.ErrNoValidSignature},
		{"signature truncated", form(selfSignature[:len(selfSignature)-2], selfPayload), braintree.ErrNoValidSignature},
		{"unknown public key", form("someone_else|"+selfSignature[len(sdkPublic)+1:], selfPayload), braintree.ErrUnknownPublicKey},
		{"no pair", form(selfSignature[len(sdkPublic)+1:], selfPayload), braintree.ErrUnknownPublicKey},
		{"space in the payload (a raw +)", []byte(braintree.FieldSignature + "=" + url.QueryEscape(selfSignature) + "&" + braintree.FieldPayload + "=" + strings.ReplaceAll(url.QueryEscape(selfPayload), "%2B", "+")), braintree.ErrInvalidPayload},
		{"carriage return in the payload", form(selfSignature, strings.ReplaceAll(selfPayload, "\n", "\r\n")), braintree.ErrInvalidPayload},
		{"a character outside base64", form(selfSignature, selfPayload+"*"), braintree.ErrInvalidPayload},
		{"bad escape in the payload", []byte(braintree.FieldSignature + "=" + url.QueryEscape(selfSignature) + "&" + braintree.FieldPayload + "=PG5%2G"), braintree.ErrInvalidPayload},
		{"bad escape in the signature", []byte(braintree.FieldSignature + "=a%7&" + braintree.FieldPayload + "=" + url.QueryEscape(selfPayload)), braintree.ErrInvalidSignature},
		{"no signature", []byte(braintree.FieldPayload + "=" + url.QueryEscape(selfPayload)), braintree.ErrNotSigned},
		{"empty signature", form("", selfPayload), braintree.ErrNotSigned},
		{"no payload", []byte(braintree.FieldSignature + "=" + url.QueryEscape(selfSignature)), braintree.ErrNotSigned},
		{"payload only in another case", []byte(braintree.FieldSignature + "=" + url.QueryEscape(selfSignature) + "&BT_PAYLOAD=" + url.QueryEscape(selfPayload)), braintree.ErrNotSigned},
		{"empty body", nil, braintree.ErrNotForm},
		{"empty pair", append(form(selfSignature, selfPayload), '&'), braintree.ErrNotForm},
		{"payload twice", append(form(selfSignature, selfPayload), "&bt_payload=QUFB"...), braintree.ErrRepeatedField},
		{"payload twice, in another case", append(form(selfSignature, selfPayload), "&Bt_Payload=QUFB"...), braintree.ErrRepeatedField},
		// PHP reads each of these names as bt_payload, after the genuine one.
		{"payload again as bt.payload", append(form(selfSignature, selfPayload), "&bt.payload=QUFB"...), braintree.ErrFieldName},
		{"payload again as bt_payload[]", append(form(selfSignature, selfPayload), "&bt_payload%5B%5D=QUFB"...), braintree.ErrFieldName},
		{"payload again as bt payload", append(form(selfSignature, selfPayload), "&bt+payload=QUFB"...), braintree.ErrFieldName},
	}
	a := newAdapter(t, sdkKeys)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.Verify(context.Background(), providers.Delivery{Body: tt.body})
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
		})
	}
}

// TestVerifyStatusClasses: a field given twice is 400, as on every form
// body; whatever else fails is 401.
func TestVerifyStatusClasses(t *testing.T) {
	a := newAdapter(t, sdkKeys)
	err := a.Verify(context.Background(), providers.Delivery{Body: append(form(selfSignature, selfPayload), "&bt_signature=x"...)})
	require.ErrorIs(t, err, providers.ErrMalformed)
	for _, body := range [][]byte{nil, form(selfSignature, selfPayload+"*"), form("x|y", selfPayload), []byte("%zz=1")} {
		err := a.Verify(context.Background(), providers.Delivery{Body: body})
		require.ErrorIs(t, err, providers.ErrUnauthorized, "%q", body)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want string // "" accepted
	}{
		{"one pair", []string{sdkKeys}, ""},
		{"a private key holding a colon", []string{"pub:priv:more"}, ""},
		{"rotation", []string{sdkKeys, "next_public:next_private"}, ""},
		{"none", nil, "braintree: no key pair configured"},
		{"empty", []string{""}, "braintree: key pair 1 of 1 is empty"},
		{"white space", []string{sdkKeys + " "}, "braintree: key pair 1 of 1 has leading or trailing white space"},
		{"no colon", []string{"integration_private_key"}, `braintree: key pair 1 of 1: not public_key:private_key (no ":")`},
		{"no public key", []string{":integration_private_key"}, "braintree: key pair 1 of 1: the public key is empty"},
		{"public key with |", []string{"a|b:secret"}, `the public key is empty or holds "|" or "&"`},
		{"no private key", []string{"integration_public_key:"}, "braintree: key pair 1 of 1: the private key is empty"},
		{"public key twice", []string{sdkKeys, sdkPublic + ":another_private"}, "braintree: key pair 2 of 2: its public key is given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := braintree.New(tt.keys)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
			for _, k := range tt.keys {
				if _, priv, ok := strings.Cut(k, ":"); ok && priv != "" {
					require.NotContains(t, err.Error(), priv, "a private key is never quoted")
				}
			}
		})
	}
}
