package standard_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/standard"
)

// The Standard Webhooks reference library's signing vector
// (libraries/go/webhook_test.go, TestWebhookSign; docs/providers.md).
const (
	vecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecTS     = "1614265330"
	vecBody   = `{"test": 2432232314}`
	vecSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var vecNow = time.Unix(1614265330, 0)

// Our own secrets for the kit and the fixtures.
var (
	secretA = "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-conformance-key-a-32byt"))
	secretB = "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-conformance-key-b-32byt"))
)

const fixtures = "../../fixtures/standard"

func newAdapter(t testing.TB, now time.Time, secrets ...string) *standard.Adapter {
	t.Helper()
	if len(secrets) == 0 {
		secrets = []string{vecSecret}
	}
	a, err := standard.New(secrets, standard.DefaultTolerance, standard.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	return a
}

func vecHeader(names ...string) http.Header {
	if len(names) == 0 {
		names = []string{standard.HeaderID, standard.HeaderTimestamp, standard.HeaderSignature}
	}
	h := http.Header{}
	h.Set(names[0], vecID)
	h.Set(names[1], vecTS)
	h.Set(names[2], vecSig)
	return h
}

var svixNames = []string{standard.HeaderSvixID, standard.HeaderSvixTimestamp, standard.HeaderSvixSignature}

func TestVerifyReproducesTheSpecificationVector(t *testing.T) {
	a := newAdapter(t, vecNow)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: vecHeader(), Body: []byte(vecBody)}))
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: vecHeader(svixNames...), Body: []byte(vecBody)}), "Svix's header names")
	// Lower-case names as the specification writes them, set directly.
	h := http.Header{"webhook-id": {vecID}, "webhook-timestamp": {vecTS}, "webhook-signature": {vecSig}}
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: canonical(h), Body: []byte(vecBody)}))

	// Sign reproduces it too, at the vector's time.
	got, err := a.SignMessage(vecID, []byte(vecBody))
	require.NoError(t, err)
	require.Equal(t, vecHeader(), got)
}

func canonical(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		for _, s := range v {
			out.Add(k, s)
		}
	}
	return out
}

// TestVerify walks the reference library's negative cases and this
// adapter's own rules.
func TestVerify(t *testing.T) {
	body := []byte(vecBody)
	other := newAdapter(t, vecNow, secretB)
	otherH, err := other.SignMessage(vecID, body)
	require.NoError(t, err)
	otherSig := otherH.Get(standard.HeaderSignature)
	bad := "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
	with := func(f func(h http.Header)) http.Header {
		h := vecHeader()
		f(h)
		return h
	}
	tests := []struct {
		name   string
		header http.Header
		body   []byte
		now    time.Time
		want   error
	}{
		{"vector", vecHeader(), body, vecNow, nil},
		{"svix names", vecHeader(svixNames...), body, vecNow, nil},
		{"both sets, equal", func() http.Header {
			h := vecHeader()
			for k, v := range vecHeader(svixNames...) {
				h[k] = v
			}
			return h
		}(), body, vecNow, nil},
		// Reference library: several signatures, one valid.
		{"valid among bad and unknown versions", with(func(h http.Header) { h.Set(standard.HeaderSignature, bad+" v2,"+bad[3:]+" "+vecSig+" "+bad) }), body, vecNow, nil},
		{"valid in a second header line", with(func(h http.Header) { h.Set(standard.HeaderSignature, bad); h.Add(standard.HeaderSignature, vecSig) }), body, vecNow, nil},
		{"exactly tolerance old", vecHeader(), body, vecNow.Add(standard.DefaultTolerance), nil},
		{"exactly tolerance ahead", vecHeader(), body, vecNow.Add(-standard.DefaultTolerance), nil},

		// Reference library: missing headers.
		{"no id", with(func(h http.Header) { h.Del(standard.HeaderID) }), body, vecNow, standard.ErrNotSigned},
		{"no timestamp", with(func(h http.Header) { h.Del(standard.HeaderTimestamp) }), body, vecNow, standard.ErrNotSigned},
		{"no signature", with(func(h http.Header) { h.Del(standard.HeaderSignature) }), body, vecNow, standard.ErrNotSigned},
		{"empty id", with(func(h http.Header) { h.Set(standard.HeaderID, "") }), body, vecNow, standard.ErrNotSigned},
		{"blank signature", with(func(h http.Header) { h.Set(standard.HeaderSignature, "   ") }), body, vecNow, standard.ErrNotSigned},
		{"no headers", nil, body, vecNow, standard.ErrNotSigned},
		// Reference library: v1, with an empty signature; old and new.
		{"v1, with an empty signature", with(func(h http.Header) { h.Set(standard.HeaderSignature, "v1,") }), body, vecNow, standard.ErrNoValidSignature},
		{"one second too old", vecHeader(), body, vecNow.Add(standard.DefaultTolerance + time.Second), standard.ErrTooOld},
		{"one second too new", vecHeader(), body, vecNow.Add(-standard.DefaultTolerance - time.Second), standard.ErrTooNew},
		{"an hour old, wrong signature: the age is checked first", with(func(h http.Header) { h.Set(standard.HeaderSignature, bad) }), body, vecNow.Add(time.Hour), standard.ErrTooOld},

		// Tampering.
		{"body one byte changed", vecHeader(), []byte(`{"test": 2432232315}`), vecNow, standard.ErrNoValidSignature},
		{"body with a trailing newline", vecHeader(), append([]byte(vecBody), '\n'), vecNow, standard.ErrNoValidSignature},
		{"body re-serialised", vecHeader(), []byte(`{"test":2432232314}`), vecNow, standard.ErrNoValidSignature},
		{"another id: a replayed body under a new id", with(func(h http.Header) { h.Set(standard.HeaderID, "msg_p5jXN8AQM9LWM0D4loKWxJel") }), body, vecNow, standard.ErrNoValidSignature},
		{"another timestamp", with(func(h http.Header) { h.Set(standard.HeaderTimestamp, "1614265331") }), body, vecNow, standard.ErrNoValidSignature},
		{"leading zero in the timestamp is other signed bytes", with(func(h http.Header) { h.Set(standard.HeaderTimestamp, "0"+vecTS) }), body, vecNow, standard.ErrNoValidSignature},
		{"only another secret's signature", with(func(h http.Header) { h.Set(standard.HeaderSignature, otherSig) }), body, vecNow, standard.ErrNoValidSignature},
		{"v1a is not v1", with(func(h http.Header) { h.Set(standard.HeaderSignature, "v1a,"+vecSig[3:]) }), body, vecNow, standard.ErrNoValidSignature},
		{"no version", with(func(h http.Header) { h.Set(standard.HeaderSignature, vecSig[3:]) }), body, vecNow, standard.ErrNoValidSignature},
		{"signature not base64", with(func(h http.Header) { h.Set(standard.HeaderSignature, "v1,!!!") }), body, vecNow, standard.ErrNoValidSignature},
		{"signature truncated", with(func(h http.Header) { h.Set(standard.HeaderSignature, vecSig[:20]) }), body, vecNow, standard.ErrNoValidSignature},

		// Malformed headers.
		{"two ids", with(func(h http.Header) { h.Add(standard.HeaderID, "msg_2") }), body, vecNow, standard.ErrInvalidHeader},
		{"two timestamps", with(func(h http.Header) { h.Add(standard.HeaderTimestamp, vecTS) }), body, vecNow, standard.ErrInvalidHeader},
		{"webhook-id and svix-id differ", with(func(h http.Header) { h.Set(standard.HeaderSvixID, "msg_other") }), body, vecNow, standard.ErrInvalidHeader},
		{"webhook-timestamp and svix-timestamp differ", with(func(h http.Header) { h.Set(standard.HeaderSvixTimestamp, "1614265331") }), body, vecNow, standard.ErrInvalidHeader},
		{"signature lists differ", with(func(h http.Header) { h.Set(standard.HeaderSvixSignature, bad) }), body, vecNow, standard.ErrInvalidHeader},
		{"timestamp not a number", with(func(h http.Header) { h.Set(standard.HeaderTimestamp, "soon") }), body, vecNow, standard.ErrInvalidHeader},
		{"timestamp with a sign", with(func(h http.Header) { h.Set(standard.HeaderTimestamp, "+"+vecTS) }), body, vecNow, standard.ErrInvalidHeader},
		{"timestamp in milliseconds", with(func(h http.Header) { h.Set(standard.HeaderTimestamp, vecTS+"000") }), body, vecNow, standard.ErrTooNew},
		{"timestamp beyond int64", with(func(h http.Header) { h.Set(standard.HeaderTimestamp, "99999999999999999999") }), body, vecNow, standard.ErrInvalidHeader},
		{"signature list oversized", with(func(h http.Header) {
			h.Set(standard.HeaderSignature, strings.Repeat(bad+" ", standard.MaxSignatureHeaderBytes/len(bad))+vecSig)
		}), body, vecNow, standard.ErrInvalidHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := newAdapter(t, tt.now).Verify(context.Background(), providers.Delivery{Header: tt.header, Body: tt.body})
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
			for _, s := range []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "g0hM9SsE", vecBody, vecID} {
				require.NotContains(t, err.Error(), s)
			}
		})
	}
}

// TestVerifyRotation: with the old and the new secret configured, a
// delivery signed with either verifies, and one signed with both (as a
// sender does during its own rotation) too.
func TestVerifyRotation(t *testing.T) {
	body := []byte(vecBody)
	both := newAdapter(t, vecNow, secretA, vecSecret)
	require.NoError(t, both.Verify(context.Background(), providers.Delivery{Header: vecHeader(), Body: body}), "signed with the second configured secret")
	hA, err := newAdapter(t, vecNow, secretA).SignMessage(vecID, body)
	require.NoError(t, err)
	require.NoError(t, both.Verify(context.Background(), providers.Delivery{Header: hA, Body: body}), "signed with the first")
	dual := vecHeader()
	dual.Set(standard.HeaderSignature, hA.Get(standard.HeaderSignature)+" "+vecSig)
	require.NoError(t, newAdapter(t, vecNow).Verify(context.Background(), providers.Delivery{Header: dual, Body: body}), "a list signed with both")
	require.ErrorIs(t, newAdapter(t, vecNow, secretB).Verify(context.Background(), providers.Delivery{Header: dual, Body: body}), standard.ErrNoValidSignature)
}

// TestVerifyRejectsEveryOneByteChange: of the body, the id and the
// timestamp.
func TestVerifyRejectsEveryOneByteChange(t *testing.T) {
	a := newAdapter(t, vecNow)
	for i := range len(vecBody) {
		b := []byte(vecBody)
		b[i] ^= 0x01
		require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: vecHeader(), Body: b}), providers.ErrUnauthorized, "body byte %d", i)
	}
	for _, name := range []string{standard.HeaderID, standard.HeaderTimestamp, standard.HeaderSignature} {
		v := vecHeader().Get(name)
		for i := range len(v) {
			b := []byte(v)
			b[i] ^= 0x01
			h := vecHeader()
			h.Set(name, string(b))
			require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: []byte(vecBody)}), providers.ErrUnauthorized, "%s byte %d", name, i)
		}
	}
}

func TestZeroAdapterRejects(t *testing.T) {
	var a standard.Adapter
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: vecHeader(), Body: []byte(vecBody)}), providers.ErrUnauthorized)
	_, err := a.Sign([]byte(vecBody))
	require.Error(t, err)
}

func TestNew(t *testing.T) {
	for name, secrets := range map[string][]string{
		"none":               nil,
		"empty":              {""},
		"whsec_ alone":       {"whsec_"},
		"no prefix":          {"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		"not base64":         {"whsec_MfKQ9r8G*KYqrTwjUPD8"},
		"trailing space":     {vecSecret + " "},
		"second one invalid": {vecSecret, "whsec_MfKQ9r8G*KYqrTwjUPD8"},
	} {
		_, err := standard.New(secrets, time.Minute)
		require.Error(t, err, name)
		require.NotContains(t, err.Error(), "MfKQ9r8G", name)
	}
	_, err := standard.New([]string{vecSecret}, 0)
	require.Error(t, err)
	_, err = standard.New([]string{vecSecret, secretA}, time.Minute)
	require.NoError(t, err)
}

func TestSignDerivesTheIDFromTheBody(t *testing.T) {
	a := newAdapter(t, vecNow)
	signed, err := a.Sign([]byte(vecBody))
	b1, h1 := signed.Body, signed.Header
	require.NoError(t, err)
	require.Equal(t, []byte(vecBody), b1)
	signed, err = a.Sign(bytes.Clone([]byte(vecBody)))
	h2 := signed.Header
	require.NoError(t, err)
	require.Equal(t, h1, h2, "the same body is the same message")
	require.Regexp(t, `^msg_[0-9a-f]{32}$`, h1.Get(standard.HeaderID))
	signed, err = a.Sign([]byte(vecBody + " "))
	h3 := signed.Header
	require.NoError(t, err)
	require.NotEqual(t, h1.Get(standard.HeaderID), h3.Get(standard.HeaderID))
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h1, Body: b1}))
}
