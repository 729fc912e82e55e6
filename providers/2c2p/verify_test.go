package twoctwop_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	twoctwop "github.com/webhookd/webhookd/providers/2c2p"
)

// The token of 2C2P's JWT guide (https://developer.2c2p.com/docs/json-web-tokens-jwt)
// and the secret key it is signed with, used as its text.
const (
	guideKey   = "1F4EDB965BBB3094F791A83750FBDCDA3852131CB5218E21E4F42929A1975E60"
	guideToken = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." +
		"eyJtZXJjaGFudElEIjoiSlQwMSIsImludm9pY2VObyI6IjE1MjM5NTM2NjEiLCJkZXNjcmlwdGlvbiI6Iml0ZW0gMSIsImFtb3VudCI6MTAwMCwiY3VycmVuY3lDb2RlIjoiU0dEIn0." +
		"ElmhOULUdK63FnriSs2XyhH1LxULoTVIopTUuQ77DvA"
)

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// jws signs header.claims (both JSON text) with key as HS256.
func jws(key, header, claims string) string {
	signed := b64(header) + "." + b64(claims)
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func body(tok string) []byte { return []byte(`{"payload":"` + tok + `"}`) }

func newAdapter(t testing.TB, keys ...string) *twoctwop.Adapter {
	t.Helper()
	a, err := twoctwop.New(keys)
	require.NoError(t, err)
	return a
}

// TestGuideTokenVerifies: 2C2P's published token verifies under its key as
// text, not under the key's hex-decoded bytes; it is a request token (no
// respCode), so it is authentic but keyless: 400.
func TestGuideTokenVerifies(t *testing.T) {
	d := providers.Delivery{Body: body(guideToken)}
	require.NoError(t, newAdapter(t, "another-merchant-key", guideKey).Verify(context.Background(), d))
	_, err := newAdapter(t, guideKey).Parse(d)
	require.ErrorIs(t, err, twoctwop.ErrNoEventKey)

	raw, err := hex.DecodeString(guideKey)
	require.NoError(t, err)
	require.ErrorIs(t, newAdapter(t, string(raw)).Verify(context.Background(), d), twoctwop.ErrNoValidSignature,
		"the key is used as its text, never hex-decoded")
}

func TestVerify(t *testing.T) {
	const key = "merchant_secret_key_for_tests"
	const claims = `{"invoiceNo":"INV1","respCode":"0000","tranRef":"77"}`
	good := jws(key, `{"alg":"HS256","typ":"JWT"}`, claims)
	head, rest, _ := strings.Cut(good, ".")
	signed, sig, _ := strings.Cut(rest, ".")
	signed = head + "." + signed
	tests := []struct {
		name string
		body []byte
		want error // nil: verifies
	}{
		{"HS256", body(good), nil},
		{"no typ", body(jws(key, `{"alg":"HS256"}`, claims)), nil},
		{"other members around payload", []byte(`{"x":1, "payload" : "` + good + `"}`), nil},
		{"alg none, unsigned", body(b64(`{"alg":"none"}`) + "." + b64(claims) + "."), twoctwop.ErrAlgorithm},
		{"alg none, signed with the key", body(jws(key, `{"alg":"none"}`, claims)), twoctwop.ErrAlgorithm},
		{"alg None", body(jws(key, `{"alg":"None"}`, claims)), twoctwop.ErrAlgorithm},
		{"alg hs256", body(jws(key, `{"alg":"hs256"}`, claims)), twoctwop.ErrAlgorithm},
		{"alg HS512", body(jws(key, `{"alg":"HS512"}`, claims)), twoctwop.ErrAlgorithm},
		{"alg RS256", body(jws(key, `{"alg":"RS256"}`, claims)), twoctwop.ErrAlgorithm},
		{"alg missing", body(jws(key, `{"typ":"JWT"}`, claims)), twoctwop.ErrAlgorithm},
		{"alg not a string", body(jws(key, `{"alg":256}`, claims)), twoctwop.ErrAlgorithm},
		{"alg twice", body(jws(key, `{"alg":"none","alg":"HS256"}`, claims)), twoctwop.ErrInvalidToken},
		{"alg in another case", body(jws(key, `{"ALG":"HS256"}`, claims)), twoctwop.ErrAlgorithm},
		{"crit", body(jws(key, `{"alg":"HS256","crit":["exp"]}`, claims)), twoctwop.ErrAlgorithm},
		{"header not JSON", body(b64(`alg=HS256`) + "." + b64(claims) + "." + sig), twoctwop.ErrInvalidToken},
		{"two segments", body(signed), twoctwop.ErrInvalidToken},
		{"four segments", body(good + ".x"), twoctwop.ErrInvalidToken},
		{"empty claims", body(head + ".." + sig), twoctwop.ErrInvalidToken},
		{"empty signature", body(signed + "."), twoctwop.ErrInvalidToken},
		{"padded signature", body(good + "="), twoctwop.ErrInvalidToken},
		{"standard base64 signature", body(signed + "." + strings.NewReplacer("-", "+", "_", "/").Replace(sig) + "+/"), twoctwop.ErrInvalidToken},
		{"stray bits in the signature", body(signed + "." + sig[:len(sig)-1] + string(sig[len(sig)-1]+1)), twoctwop.ErrInvalidToken},
		{"claims changed", body(head + "." + b64(`{"invoiceNo":"INV1","respCode":"0000","tranRef":"78"}`) + "." + sig), twoctwop.ErrNoValidSignature},
		{"another key", body(jws("someone-else", `{"alg":"HS256","typ":"JWT"}`, claims)), twoctwop.ErrNoValidSignature},
		{"no payload", []byte(`{"token":"` + good + `"}`), twoctwop.ErrNotSigned},
		{"empty payload", body(""), twoctwop.ErrNotSigned},
		{"payload not a string", []byte(`{"payload":{"alg":"HS256"}}`), twoctwop.ErrNotSigned},
		{"not JSON", []byte(good), twoctwop.ErrNotSigned},
		{"empty body", nil, twoctwop.ErrNotSigned},
		{"payload twice", []byte(`{"payload":"` + good + `","payload":"x"}`), twoctwop.ErrRepeatedField},
		{"payload in another case too", []byte(`{"payload":"` + good + `","Payload":"x"}`), twoctwop.ErrRepeatedField},
		{"payload only in another case", []byte(`{"PAYLOAD":"` + good + `"}`), twoctwop.ErrRepeatedField},
	}
	a := newAdapter(t, key)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.Verify(context.Background(), providers.Delivery{Body: tt.body})
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			if tt.want == twoctwop.ErrRepeatedField {
				require.ErrorIs(t, err, providers.ErrMalformed)
			} else {
				require.ErrorIs(t, err, providers.ErrUnauthorized)
			}
		})
	}
}

func TestNew(t *testing.T) {
	for keys, want := range map[string]string{
		"":     "2c2p: no secret key configured",
		" k":   "2c2p: secret key 1 of 1 has leading or trailing white space",
		"k,":   "2c2p: secret key 2 of 2 is empty",
		"k,k2": "",
	} {
		var list []string
		if keys != "" {
			list = strings.Split(keys, ",")
		}
		_, err := twoctwop.New(list)
		if want == "" {
			require.NoError(t, err)
			continue
		}
		require.EqualError(t, err, want)
	}
}
