package doku_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/doku"
)

// DOKU publishes no signing vector: no secret key is ever paired with a
// signature in its SDKs' tests or its documentation. This one is
// self-derived (docs/providers.md, "doku"): the headers and body of DOKU's
// "HTTP Notification Sample - Non SNAP" (virtual account), a made-up secret
// key and the notification path of DOKU's Request-Target example, signed
// with the algorithm of DOKU's jokul-php-library Utils::generateSignature
// and recomputed with Python's hmac and Node's crypto. It proves that this
// package agrees with that algorithm, not with DOKU's servers: check it
// against a sandbox notification before going live.
const (
	vecSecret    = "SK-EXAMPLE-NOT-REAL"
	vecClientID  = "MCH-0001-10791114622547"
	vecRequestID = "479b663f-5c9d-400d-8e80-3e548a8f7639"
	vecTimestamp = "2020-08-11T08:45:42Z"
	vecTarget    = "/payments/notifications"
	vecBody      = `{"service":{"id":"VIRTUAL_ACCOUNT"},"acquirer":{"id":"BCA"},"channel":{"id":"VIRTUAL_ACCOUNT_BCA"},"transaction":{"status":"SUCCESS","date":"2021-01-27T03:24:23Z","original_request_id":"15022aab-444f-4b04-afa8-ddfce89432ec"},"order":{"invoice_number":"INV-20210124-0001","amount":150000},"virtual_account_info":{"virtual_account_number":"1900600000000046"}}`
	vecDigest    = "M4vJ0gqMUeDEbWrwNiNJAQPmpkKXNIkAXNHIV52aU0c="
	vecSignature = "HMACSHA256=8/JzOzapTrW7lEocnZxqx98rS+1oAvf0UlOM+TzsL+s="
)

var vecTime = time.Date(2020, 8, 11, 8, 45, 42, 0, time.UTC)

func newAdapter(t testing.TB, now time.Time, opts ...doku.Option) *doku.Adapter {
	t.Helper()
	return newAdapterKeys(t, now, []string{vecSecret}, opts...)
}

func newAdapterKeys(t testing.TB, now time.Time, keys []string, opts ...doku.Option) *doku.Adapter {
	t.Helper()
	opts = append([]doku.Option{doku.WithNotificationPath(vecTarget), doku.WithClock(func() time.Time { return now })}, opts...)
	a, err := doku.New(vecClientID, keys, opts...)
	require.NoError(t, err)
	return a
}

// vecHeader is the vector's headers with edits applied: a value to set, or
// "" to remove the header.
func vecHeader(edits ...string) http.Header {
	h := http.Header{}
	h.Set(doku.HeaderClientID, vecClientID)
	h.Set(doku.HeaderRequestID, vecRequestID)
	h.Set(doku.HeaderTimestamp, vecTimestamp)
	h.Set(doku.HeaderSignature, vecSignature)
	for i := 0; i+1 < len(edits); i += 2 {
		if edits[i+1] == "" {
			h.Del(edits[i])
			continue
		}
		h.Set(edits[i], edits[i+1])
	}
	return h
}

func TestComponentVector(t *testing.T) {
	require.Equal(t, "Client-Id:"+vecClientID+"\nRequest-Id:"+vecRequestID+"\nRequest-Timestamp:"+vecTimestamp+
		"\nRequest-Target:"+vecTarget+"\nDigest:"+vecDigest,
		string(doku.Component(vecClientID, vecRequestID, vecTimestamp, vecTarget, []byte(vecBody))))
	require.Equal(t, vecSignature, doku.SignatureHeader(vecSecret, vecClientID, vecRequestID, vecTimestamp, vecTarget, []byte(vecBody)))
}

func TestVerify(t *testing.T) {
	tol := doku.DefaultTolerance
	other := doku.SignatureHeader("SK-OTHER", vecClientID, vecRequestID, vecTimestamp, vecTarget, []byte(vecBody))
	tests := []struct {
		name    string
		keys    []string
		opts    []doku.Option
		now     time.Time
		header  http.Header
		body    string
		wantErr error
	}{
		{name: "self-derived vector", header: vecHeader(), body: vecBody},
		{name: "vector against the second of two keys (rotation)", keys: []string{"SK-NEW-NOT-REAL", vecSecret}, header: vecHeader(), body: vecBody},
		{name: "vector against the first of two keys", keys: []string{vecSecret, "SK-NEW-NOT-REAL"}, header: vecHeader(), body: vecBody},
		{name: "header names in another case", body: vecBody, header: http.Header{
			"Client-Id": {vecClientID}, "Request-Id": {vecRequestID}, "Request-Timestamp": {vecTimestamp}, "Signature": {vecSignature}}},

		// Tampering: every signed part.
		{name: "one byte of the body changed", header: vecHeader(), body: strings.Replace(vecBody, "150000", "150001", 1), wantErr: doku.ErrNoValidSignature},
		{name: "body re-serialised with spaces", header: vecHeader(), body: strings.Replace(vecBody, `":`, `": `, -1), wantErr: doku.ErrNoValidSignature},
		{name: "body with a trailing newline", header: vecHeader(), body: vecBody + "\n", wantErr: doku.ErrNoValidSignature},
		{name: "empty body", header: vecHeader(), wantErr: doku.ErrNoValidSignature},
		{name: "Request-Id changed", header: vecHeader(doku.HeaderRequestID, "479b663f-5c9d-400d-8e80-3e548a8f7630"), body: vecBody, wantErr: doku.ErrNoValidSignature},
		{name: "Request-Timestamp changed", header: vecHeader(doku.HeaderTimestamp, "2020-08-11T08:45:43Z"), body: vecBody, wantErr: doku.ErrNoValidSignature},
		{name: "Request-Timestamp the same instant, written otherwise", header: vecHeader(doku.HeaderTimestamp, "2020-08-11T15:45:42+07:00"), body: vecBody, wantErr: doku.ErrNoValidSignature},
		{name: "another client's notification, not signed again", header: vecHeader(doku.HeaderClientID, "MCH-0001-10791114622548"), body: vecBody, wantErr: doku.ErrNoValidSignature},
		// Checked once the signature holds (its key is then logged).
		{name: "another client's notification, signed", header: vecHeader(doku.HeaderClientID, "MCH-0001-10791114622548",
			doku.HeaderSignature, doku.SignatureHeader(vecSecret, "MCH-0001-10791114622548", vecRequestID, vecTimestamp, vecTarget, []byte(vecBody))),
			body: vecBody, wantErr: doku.ErrWrongClient},
		{name: "notification path other than the one signed", opts: []doku.Option{doku.WithNotificationPath(doku.DefaultNotificationPath)},
			header: vecHeader(), body: vecBody, wantErr: doku.ErrNoValidSignature},
		{name: "notification path with a trailing slash", opts: []doku.Option{doku.WithNotificationPath(vecTarget + "/")},
			header: vecHeader(), body: vecBody, wantErr: doku.ErrNoValidSignature},
		{name: "wrong secret key", keys: []string{"SK-OTHER"}, header: vecHeader(), body: vecBody, wantErr: doku.ErrNoValidSignature},
		{name: "signed with another key", header: vecHeader(doku.HeaderSignature, other), body: vecBody, wantErr: doku.ErrNoValidSignature},
		{name: "signature one bit off", header: vecHeader(doku.HeaderSignature, strings.Replace(vecSignature, "8/J", "8/K", 1)), body: vecBody, wantErr: doku.ErrNoValidSignature},
		{name: "signature without its prefix", header: vecHeader(doku.HeaderSignature, strings.TrimPrefix(vecSignature, "HMACSHA256=")), body: vecBody, wantErr: doku.ErrInvalidHeader},
		{name: "signature with a lower-case prefix", header: vecHeader(doku.HeaderSignature, "hmacsha256="+strings.TrimPrefix(vecSignature, "HMACSHA256=")), body: vecBody, wantErr: doku.ErrInvalidHeader},
		{name: "signature in hex", header: vecHeader(doku.HeaderSignature, "HMACSHA256="+strings.Repeat("ab", 32)), body: vecBody, wantErr: doku.ErrNoValidSignature},
		{name: "signature without base64 padding", header: vecHeader(doku.HeaderSignature, strings.TrimSuffix(vecSignature, "=")), body: vecBody, wantErr: doku.ErrNoValidSignature},
		{name: "signature truncated", header: vecHeader(doku.HeaderSignature, vecSignature[:30]), body: vecBody, wantErr: doku.ErrNoValidSignature},

		// Missing, repeated and malformed headers.
		{name: "no headers", body: vecBody, wantErr: doku.ErrNotSigned},
		{name: "no Signature", header: vecHeader(doku.HeaderSignature, ""), body: vecBody, wantErr: doku.ErrNotSigned},
		{name: "no Client-Id", header: vecHeader(doku.HeaderClientID, ""), body: vecBody, wantErr: doku.ErrNotSigned},
		{name: "no Request-Id", header: vecHeader(doku.HeaderRequestID, ""), body: vecBody, wantErr: doku.ErrNotSigned},
		{name: "no Request-Timestamp", header: vecHeader(doku.HeaderTimestamp, ""), body: vecBody, wantErr: doku.ErrNotSigned},
		{name: "Signature sent twice", body: vecBody, wantErr: doku.ErrInvalidHeader, header: func() http.Header {
			h := vecHeader()
			h.Add(doku.HeaderSignature, other)
			return h
		}()},
		{name: "Request-Id holding a newline", body: vecBody, wantErr: doku.ErrInvalidHeader,
			header: vecHeader(doku.HeaderRequestID, vecRequestID+"\nRequest-Timestamp:"+vecTimestamp)},
		{name: "Request-Id with a space", header: vecHeader(doku.HeaderRequestID, "479b663f 5c9d"), body: vecBody, wantErr: doku.ErrInvalidHeader},
		{name: "Request-Id longer than 256 bytes", header: vecHeader(doku.HeaderRequestID, strings.Repeat("a", 257)), body: vecBody, wantErr: doku.ErrInvalidHeader},
		{name: "Request-Timestamp not a time", header: vecHeader(doku.HeaderTimestamp, "1597135542"), body: vecBody, wantErr: doku.ErrInvalidHeader},
		{name: "Request-Timestamp without a zone", header: vecHeader(doku.HeaderTimestamp, "2020-08-11T08:45:42"), body: vecBody, wantErr: doku.ErrInvalidHeader},

		// Tolerance, both ways.
		{name: "a retry 12 hours later with the first timestamp", now: vecTime.Add(12 * time.Hour), header: vecHeader(), body: vecBody},
		{name: "just inside the tolerance", now: vecTime.Add(tol), header: vecHeader(), body: vecBody},
		{name: "older than the tolerance", now: vecTime.Add(tol + time.Second), header: vecHeader(), body: vecBody, wantErr: doku.ErrTooOld},
		{name: "old timestamp refused before the signature is checked", now: vecTime.Add(30 * 24 * time.Hour),
			header: vecHeader(doku.HeaderSignature, other), body: vecBody, wantErr: doku.ErrTooOld},
		{name: "a shorter tolerance", opts: []doku.Option{doku.WithTolerance(time.Hour)}, now: vecTime.Add(61 * time.Minute),
			header: vecHeader(), body: vecBody, wantErr: doku.ErrTooOld},
		{name: "ahead of the clock within the tolerance", now: vecTime.Add(-tol), header: vecHeader(), body: vecBody},
		{name: "ahead of the clock by more than the tolerance", now: vecTime.Add(-tol - time.Second), header: vecHeader(), body: vecBody, wantErr: doku.ErrTooNew},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = vecTime.Add(time.Minute)
			}
			keys := tt.keys
			if keys == nil {
				keys = []string{vecSecret}
			}
			a := newAdapterKeys(t, now, keys, tt.opts...)
			err := a.Verify(context.Background(), providers.Delivery{Header: tt.header, Body: []byte(tt.body)})
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
			require.NotErrorIs(t, err, providers.ErrMalformed)
			for _, s := range append(keys, vecSignature[len("HMACSHA256="):], other[len("HMACSHA256="):], vecRequestID) {
				require.NotContains(t, err.Error(), s, "error messages must not quote keys, signatures or headers")
			}
		})
	}
}

func TestVerifyZeroAdapterRejects(t *testing.T) {
	var a doku.Adapter
	for _, h := range []http.Header{nil, vecHeader(),
		vecHeader(doku.HeaderSignature, doku.SignatureHeader("", vecClientID, vecRequestID, vecTimestamp, "", []byte(vecBody)))} {
		require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: []byte(vecBody)}), providers.ErrUnauthorized)
	}
}

func TestErrorsAreDistinct(t *testing.T) {
	errs := []error{doku.ErrNotSigned, doku.ErrInvalidHeader, doku.ErrWrongClient, doku.ErrTooOld, doku.ErrTooNew, doku.ErrNoValidSignature}
	for i, a := range errs {
		require.ErrorIs(t, a, providers.ErrUnauthorized)
		for j, b := range errs {
			require.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name     string
		clientID string
		keys     []string
		opts     []doku.Option
		wantErr  bool
	}{
		{"one key", vecClientID, []string{vecSecret}, nil, false},
		{"two keys", vecClientID, []string{vecSecret, "SK-NEW-NOT-REAL"}, nil, false},
		{"a path with a query", vecClientID, []string{vecSecret}, []doku.Option{doku.WithNotificationPath("/notify?site=id")}, false},
		{"no client id", "", []string{vecSecret}, nil, true},
		{"client id with a space", "MCH 1", []string{vecSecret}, nil, true},
		{"no keys", vecClientID, nil, nil, true},
		{"empty key", vecClientID, []string{vecSecret, ""}, nil, true},
		{"key with a trailing space", vecClientID, []string{vecSecret + " "}, nil, true},
		{"relative path", vecClientID, []string{vecSecret}, []doku.Option{doku.WithNotificationPath("webhooks/doku")}, true},
		{"full URL as the path", vecClientID, []string{vecSecret}, []doku.Option{doku.WithNotificationPath("https://example.com/webhooks/doku")}, true},
		{"path with a newline", vecClientID, []string{vecSecret}, []doku.Option{doku.WithNotificationPath("/a\nDigest:x")}, true},
		{"zero tolerance", vecClientID, []string{vecSecret}, []doku.Option{doku.WithTolerance(0)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := doku.New(tt.clientID, tt.keys, tt.opts...)
			if !tt.wantErr {
				require.NoError(t, err)
				require.Equal(t, "doku", a.Name())
				return
			}
			require.Error(t, err)
			require.Nil(t, a)
			for _, k := range tt.keys {
				if strings.TrimSpace(k) != "" {
					require.NotContains(t, err.Error(), strings.TrimSpace(k))
				}
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	// Two keys, the matching one second: the worst case of a rotation.
	a := newAdapterKeys(b, vecTime, []string{"SK-NEW-NOT-REAL", vecSecret})
	for _, size := range []int{1 << 10, 1 << 20} {
		body := []byte(strings.Repeat("x", size))
		h := vecHeader(doku.HeaderSignature, doku.SignatureHeader(vecSecret, vecClientID, vecRequestID, vecTimestamp, vecTarget, body))
		b.Run(fmt.Sprintf("body=%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
