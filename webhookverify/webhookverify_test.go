package webhookverify

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/signature"
)

// The Standard Webhooks specification's published vector.
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTS     = 1614265330
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var vectorTime = time.Unix(vectorTS, 0)

func vectorHeader() http.Header {
	h := http.Header{}
	h.Set("webhook-id", vectorID)
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", vectorSig)
	return h
}

func TestSignerReproducesTheSpecificationVector(t *testing.T) {
	s, err := NewSigner(vectorSecret)
	require.NoError(t, err)
	h := http.Header{}
	s.Sign(h, vectorID, vectorTime, []byte(vectorBody))
	require.Equal(t, vectorHeader(), h)
	require.NoError(t, verify(vectorSecret, h, []byte(vectorBody), DefaultTolerance, vectorTime))
}

func TestVerify(t *testing.T) {
	body := []byte(vectorBody)
	mutate := func(f func(h http.Header)) http.Header {
		h := vectorHeader()
		f(h)
		return h
	}
	other, err := NewSigner("whsec_" + base64.StdEncoding.EncodeToString([]byte("another-key-of-24-bytes!")))
	require.NoError(t, err)
	otherSig := func() string {
		h := http.Header{}
		other.Sign(h, vectorID, vectorTime, body)
		return h.Get(HeaderSignature)
	}()
	tests := []struct {
		name   string
		secret string
		header http.Header
		body   []byte
		now    time.Time
		tol    time.Duration
		want   error
	}{
		{"valid", vectorSecret, vectorHeader(), body, vectorTime, DefaultTolerance, nil},
		{"rotation: valid signature second", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderSignature, otherSig+" "+vectorSig) }), body, vectorTime, DefaultTolerance, nil},
		{"rotation: valid signature first", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderSignature, vectorSig+" "+otherSig) }), body, vectorTime, DefaultTolerance, nil},
		{"rotation: signatures in two header lines", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderSignature, otherSig); h.Add(HeaderSignature, vectorSig) }), body, vectorTime, DefaultTolerance, nil},
		{"unknown versions are skipped", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderSignature, "v1a,AAAA v2,xyz "+vectorSig) }), body, vectorTime, DefaultTolerance, nil},
		{"only another secret's signature", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderSignature, otherSig) }), body, vectorTime, DefaultTolerance, ErrNoValidSignature},
		{"body one byte changed", vectorSecret, vectorHeader(), []byte(`{"test": 2432232315}`), vectorTime, DefaultTolerance, ErrNoValidSignature},
		{"body with a trailing newline", vectorSecret, vectorHeader(), append([]byte(vectorBody), '\n'), vectorTime, DefaultTolerance, ErrNoValidSignature},
		{"id changed", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderID, vectorID+"x") }), body, vectorTime, DefaultTolerance, ErrNoValidSignature},
		{"timestamp changed", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderTimestamp, "1614265331") }), body, vectorTime, DefaultTolerance, ErrNoValidSignature},
		{"timestamp with leading zero signs different bytes", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderTimestamp, "01614265330") }), body, vectorTime, DefaultTolerance, ErrNoValidSignature},
		{"wrong secret", "whsec_" + base64.StdEncoding.EncodeToString([]byte("wrong")), vectorHeader(), body, vectorTime, DefaultTolerance, ErrNoValidSignature},
		{"signature is v0", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderSignature, strings.Replace(vectorSig, "v1,", "v0,", 1)) }), body, vectorTime, DefaultTolerance, ErrNoValidSignature},
		{"signature not base64", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderSignature, "v1,!!!") }), body, vectorTime, DefaultTolerance, ErrNoValidSignature},
		{"signature truncated", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderSignature, vectorSig[:20]) }), body, vectorTime, DefaultTolerance, ErrNoValidSignature},
		{"no id", vectorSecret, mutate(func(h http.Header) { h.Del(HeaderID) }), body, vectorTime, DefaultTolerance, ErrNotSigned},
		{"no timestamp", vectorSecret, mutate(func(h http.Header) { h.Del(HeaderTimestamp) }), body, vectorTime, DefaultTolerance, ErrNotSigned},
		{"no signature", vectorSecret, mutate(func(h http.Header) { h.Del(HeaderSignature) }), body, vectorTime, DefaultTolerance, ErrNotSigned},
		{"blank signature", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderSignature, "  ") }), body, vectorTime, DefaultTolerance, ErrNotSigned},
		{"two ids", vectorSecret, mutate(func(h http.Header) { h.Add(HeaderID, "msg_2") }), body, vectorTime, DefaultTolerance, ErrInvalidHeader},
		{"two timestamps", vectorSecret, mutate(func(h http.Header) { h.Add(HeaderTimestamp, "1614265330") }), body, vectorTime, DefaultTolerance, ErrInvalidHeader},
		{"timestamp not a number", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderTimestamp, "soon") }), body, vectorTime, DefaultTolerance, ErrInvalidHeader},
		{"timestamp with a sign", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderTimestamp, "+1614265330") }), body, vectorTime, DefaultTolerance, ErrInvalidHeader},
		{"timestamp in milliseconds overflows to too new", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderTimestamp, "1614265330000") }), body, vectorTime, DefaultTolerance, ErrTooNew},
		{"timestamp beyond int64", vectorSecret, mutate(func(h http.Header) { h.Set(HeaderTimestamp, "99999999999999999999") }), body, vectorTime, DefaultTolerance, ErrInvalidHeader},
		{"signature list oversized", vectorSecret, mutate(func(h http.Header) {
			h.Set(HeaderSignature, strings.Repeat("v1,AAAA ", MaxSignatureHeaderBytes/8+1)+vectorSig)
		}), body, vectorTime, DefaultTolerance, ErrInvalidHeader},
		{"exactly at the tolerance", vectorSecret, vectorHeader(), body, vectorTime.Add(5 * time.Minute), DefaultTolerance, nil},
		{"one second too old", vectorSecret, vectorHeader(), body, vectorTime.Add(5*time.Minute + time.Second), DefaultTolerance, ErrTooOld},
		{"one second too new", vectorSecret, vectorHeader(), body, vectorTime.Add(-5*time.Minute - time.Second), DefaultTolerance, ErrTooNew},
		{"too old is checked before the signature", "whsec_" + base64.StdEncoding.EncodeToString([]byte("wrong")), vectorHeader(), body, vectorTime.Add(time.Hour), DefaultTolerance, ErrTooOld},
		{"zero tolerance fails closed", vectorSecret, vectorHeader(), body, vectorTime, 0, ErrInvalidTolerance},
		{"empty secret", "", vectorHeader(), body, vectorTime, DefaultTolerance, ErrInvalidSecret},
		{"whsec_ secret not base64", "whsec_not*base64", vectorHeader(), body, vectorTime, DefaultTolerance, ErrInvalidSecret},
		{"whsec_ alone", "whsec_", vectorHeader(), body, vectorTime, DefaultTolerance, ErrInvalidSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verify(tt.secret, tt.header, tt.body, tt.tol, tt.now)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			// No error says more than which check failed.
			for _, s := range []string{tt.secret, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "g0hM9SsE", vectorBody} {
				if len(s) > len(SecretPrefix) {
					require.NotContains(t, err.Error(), s)
				}
			}
		})
	}
}

// Every single-byte change of the body fails.
func TestVerifyRejectsEveryOneByteChange(t *testing.T) {
	body := []byte(vectorBody)
	for i := range body {
		tampered := bytes.Clone(body)
		tampered[i] ^= 0x01
		require.ErrorIs(t, verify(vectorSecret, vectorHeader(), tampered, DefaultTolerance, vectorTime), ErrNoValidSignature, "byte %d", i)
	}
}

func TestPlainSecretIsItsOwnBytes(t *testing.T) {
	const plain = "a plain secret, used as it is"
	encoded := SecretPrefix + base64.StdEncoding.EncodeToString([]byte(plain))
	k1, err := DecodeSecret(plain)
	require.NoError(t, err)
	k2, err := DecodeSecret(encoded)
	require.NoError(t, err)
	require.Equal(t, k1, k2)

	s, err := NewSigner(plain)
	require.NoError(t, err)
	h := http.Header{}
	now := time.Now()
	s.Sign(h, "stripe:evt_1", now, []byte("{}"))
	require.NoError(t, verify(encoded, h, []byte("{}"), time.Minute, now))
	require.NoError(t, verify(plain, h, []byte("{}"), time.Minute, now))
}

func TestSignerRotation(t *testing.T) {
	const oldSecret, newSecret = "old-secret-0123456789", "new-secret-0123456789"
	s, err := NewSigner(newSecret, oldSecret)
	require.NoError(t, err)
	require.Equal(t, len(oldSecret), s.MinKeyBytes())
	h := http.Header{}
	now := time.Now()
	s.Sign(h, "stripe:evt_1", now, []byte("{}"))
	require.Len(t, strings.Fields(h.Get(HeaderSignature)), 2)
	for _, secret := range []string{oldSecret, newSecret} {
		require.NoError(t, verify(secret, h, []byte("{}"), time.Minute, now))
	}
	require.ErrorIs(t, verify("a third secret", h, []byte("{}"), time.Minute, now), ErrNoValidSignature)
}

func TestNewSignerErrorsHideTheSecret(t *testing.T) {
	_, err := NewSigner()
	require.ErrorIs(t, err, ErrInvalidSecret)
	const bad = "whsec_c2VjcmV0*garbage"
	_, err = NewSigner("whsec_c2VjcmV0LXZhbHVl", bad)
	require.ErrorIs(t, err, ErrInvalidSecret)
	require.Contains(t, err.Error(), "secret 2 of 2")
	require.NotContains(t, err.Error(), "c2VjcmV0")
	require.NotContains(t, err.Error(), "garbage")
}

func FuzzVerify(f *testing.F) {
	f.Add(vectorID, "1614265330", vectorSig, []byte(vectorBody))
	f.Add("", "", "", []byte{})
	f.Add("id", "-1", "v1, v1,,, v1a,AAAA", []byte("x"))
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		if verify(vectorSecret, h, body, DefaultTolerance, vectorTime) != nil {
			return
		}
		// Accepted: the header must hold the true MAC of this very message.
		key, _ := DecodeSecret(vectorSecret)
		want := base64.StdEncoding.EncodeToString(signature.WebhookMAC(key, id, ts, body))
		if !strings.Contains(sig, "v1,"+want) {
			t.Fatalf("accepted %q, which lacks the message's signature", sig)
		}
	})
}
