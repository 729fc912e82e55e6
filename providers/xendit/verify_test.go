package xendit_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/xendit"
)

const (
	token    = "xnd_webhook_token_0f8e7d6c5b4a39281706f5e4d3c2b1a0a1b2c3d4e5f6"
	tokenNew = "xnd_webhook_token_rotated_77aa88bb99cc00dd11ee22ff33aa44bb55cc"
)

func newAdapter(t testing.TB, tokens ...string) *xendit.Adapter {
	t.Helper()
	if len(tokens) == 0 {
		tokens = []string{token}
	}
	a, err := xendit.New(tokens)
	require.NoError(t, err)
	return a
}

func tokenHeader(values ...string) http.Header {
	h := http.Header{}
	for _, v := range values {
		h.Add(xendit.HeaderName, v)
	}
	return h
}

func TestVerify(t *testing.T) {
	body := []byte(`{"id":"65f2a1c4e7b3d90012ab34cd","status":"PAID"}`)
	tests := []struct {
		name    string
		tokens  []string
		header  http.Header
		wantErr error
	}{
		{name: "token", header: tokenHeader(token)},
		{name: "non-canonical map key, which net/http never produces", header: http.Header{"x-callback-token": {token}}, wantErr: xendit.ErrNoToken},
		{name: "canonicalised lower-case header name", header: func() http.Header {
			h := http.Header{}
			h.Set("x-callback-token", token)
			return h
		}()},
		{name: "first of two tokens", tokens: []string{token, tokenNew}, header: tokenHeader(token)},
		{name: "second of two tokens", tokens: []string{token, tokenNew}, header: tokenHeader(tokenNew)},
		{name: "old token after the rotation", tokens: []string{tokenNew}, header: tokenHeader(token), wantErr: xendit.ErrInvalidToken},
		{name: "one byte changed", header: tokenHeader(token[:10] + "X" + token[11:]), wantErr: xendit.ErrInvalidToken},
		{name: "prefix of the token", header: tokenHeader(token[:len(token)-1]), wantErr: xendit.ErrInvalidToken},
		{name: "token with a suffix", header: tokenHeader(token + "0"), wantErr: xendit.ErrInvalidToken},
		{name: "token with a trailing space", header: tokenHeader(token + " "), wantErr: xendit.ErrInvalidToken},
		{name: "token in upper case", header: tokenHeader(strings.ToUpper(token)), wantErr: xendit.ErrInvalidToken},
		{name: "two tokens joined", tokens: []string{token, tokenNew}, header: tokenHeader(token + "," + tokenNew), wantErr: xendit.ErrInvalidToken},
		{name: "missing header", header: http.Header{}, wantErr: xendit.ErrNoToken},
		{name: "nil header", wantErr: xendit.ErrNoToken},
		{name: "empty header", header: tokenHeader(""), wantErr: xendit.ErrNoToken},
		{name: "header sent twice", header: tokenHeader(token, token), wantErr: xendit.ErrInvalidHeader},
		{name: "oversized header", header: tokenHeader(strings.Repeat("a", xendit.MaxTokenBytes+1)), wantErr: xendit.ErrInvalidHeader},
		{name: "Stripe's header is not Xendit's", header: http.Header{"Stripe-Signature": {token}}, wantErr: xendit.ErrNoToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdapter(t, tt.tokens...)
			err := a.Verify(context.Background(), providers.Delivery{Header: tt.header, Body: body})
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
			require.NotErrorIs(t, err, providers.ErrMalformed)
			for _, s := range []string{token, tokenNew, token[:16]} {
				require.NotContains(t, err.Error(), s, "errors must not quote tokens")
			}
		})
	}
}

func TestVerifyIgnoresBody(t *testing.T) {
	a := newAdapter(t)
	for _, body := range []string{"", "not json", `{"id":"x"}`} {
		require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: tokenHeader(token), Body: []byte(body)}))
	}
}

func TestVerifyZeroAdapterRejects(t *testing.T) {
	var a xendit.Adapter
	for _, h := range []http.Header{nil, tokenHeader(token), tokenHeader("")} {
		require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: nil}), providers.ErrUnauthorized)
	}
}

func TestErrorsAreDistinct(t *testing.T) {
	groups := []struct {
		base error
		errs []error
	}{
		{providers.ErrUnauthorized, []error{xendit.ErrNoToken, xendit.ErrInvalidHeader, xendit.ErrInvalidToken}},
		{providers.ErrMalformed, []error{xendit.ErrNotJSON, xendit.ErrNoEventKey, xendit.ErrInvalidEventType}},
	}
	var all []error
	for _, g := range groups {
		for _, e := range g.errs {
			require.ErrorIs(t, e, g.base)
			all = append(all, e)
		}
	}
	for i, a := range all {
		for j, b := range all {
			require.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		tokens  []string
		wantErr bool
	}{
		{"one token", []string{token}, false},
		{"two tokens", []string{token, tokenNew}, false},
		{"nil", nil, true},
		{"empty list", []string{}, true},
		{"empty token", []string{token, ""}, true},
		{"token with a leading space", []string{" " + token}, true},
		{"token with a trailing newline", []string{token + "\n"}, true},
		{"token too long", []string{strings.Repeat("a", xendit.MaxTokenBytes+1)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := xendit.New(tt.tokens)
			if !tt.wantErr {
				require.NoError(t, err)
				require.Equal(t, "xendit", a.Name())
				return
			}
			require.Error(t, err)
			require.Nil(t, a)
			require.NotContains(t, err.Error(), token)
		})
	}
}

func TestNewCopiesTokens(t *testing.T) {
	tokens := []string{token}
	a := newAdapter(t, tokens...)
	tokens[0] = "changed"
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: tokenHeader(token), Body: nil}))
}

func TestSign(t *testing.T) {
	a := newAdapter(t, tokenNew, token)
	var signer providers.Provider = a
	body := []byte(`{"id":"x","status":"PAID"}`)
	signed, err := providers.Sign(signer, body)
	out, h := signed.Body, signed.Header
	require.NoError(t, err)
	require.Equal(t, body, out)
	require.Equal(t, http.Header{xendit.HeaderName: {tokenNew}}, h, "Sign uses the first token")
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: out}))
	require.ErrorIs(t, newAdapter(t, token).Verify(context.Background(), providers.Delivery{Header: h, Body: out}), xendit.ErrInvalidToken)

	var zero xendit.Adapter
	_, err = zero.Sign(body)
	require.Error(t, err)
}

func BenchmarkVerify(b *testing.B) {
	// Two tokens, the matching one second: the worst case of a rotation.
	a := newAdapter(b, tokenNew, token)
	h := tokenHeader(token)
	for b.Loop() {
		if err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: nil}); err != nil {
			b.Fatal(err)
		}
	}
}
