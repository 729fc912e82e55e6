package spec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// builtinSpec returns the built-in spec called name.
func builtinSpec(t *testing.T, name string) *Spec {
	t.Helper()
	s, err := BuiltinNamed(name)
	require.NoError(t, err)
	return s
}

// gatewayFixtures returns the bodies of fixtures/<name>/*.json by file name.
func gatewayFixtures(t *testing.T, name string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "fixtures", name, "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(paths), 2, "fixtures/%s", name)
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		body, err := os.ReadFile(p)
		require.NoError(t, err)
		out[filepath.Base(p)] = body
	}
	return out
}

// gatewaySigned is a mercadopago delivery of a fixture, signed by p.
func gatewaySigned(t *testing.T, p *Provider) providers.Delivery {
	t.Helper()
	d, err := p.Sign(gatewayFixtures(t, "mercadopago")["payment_updated.json"])
	require.NoError(t, err)
	return d
}

// clone copies d so that tampering leaves the original alone.
func clone(d providers.Delivery) providers.Delivery {
	c := providers.Delivery{Header: d.Header.Clone(), Body: bytes.Clone(d.Body)}
	if d.Query != nil {
		c.Query = make(map[string][]string, len(d.Query))
		for k, v := range d.Query {
			c.Query[k] = append([]string(nil), v...)
		}
	}
	return c
}

func TestGatewaysKeyOnlySignedParts(t *testing.T) {
	ctx := context.Background()
	t.Run("shopify ignores the unsigned event id header", func(t *testing.T) {
		s := builtinSpec(t, "shopify")
		p, err := s.New([]string{"shpss_secret"}, nil, nil)
		require.NoError(t, err)
		d, err := p.Sign(gatewayFixtures(t, "shopify")["orders_create.json"])
		require.NoError(t, err)
		d.Header.Set("X-Shopify-Event-Id", "98880550-7158-44d4-b7cd-2c97c8a091b5")
		first, err := p.Parse(d)
		require.NoError(t, err)
		d.Header.Set("X-Shopify-Event-Id", "another-id-the-sender-made-up")
		require.NoError(t, p.Verify(ctx, d), "the header is not signed")
		second, err := p.Parse(d)
		require.NoError(t, err)
		require.Equal(t, first[0].Key, second[0].Key, "one signed body, one key")
	})
	t.Run("mercadopago ignores the unsigned body", func(t *testing.T) {
		s := builtinSpec(t, "mercadopago")
		p, err := s.New([]string{"mp_secret"}, nil, nil)
		require.NoError(t, err)
		d, err := p.Sign(gatewayFixtures(t, "mercadopago")["payment_updated.json"])
		require.NoError(t, err)
		first, err := p.Parse(d)
		require.NoError(t, err)
		swapped := clone(d)
		swapped.Body = []byte(`{"action":"payment.updated","api_version":"v1","data":{"id":"999999999"},"type":"payment"}`)
		require.NoError(t, p.Verify(ctx, swapped), "the body is not signed")
		second, err := p.Parse(swapped)
		require.NoError(t, err)
		require.Equal(t, first[0].Key, second[0].Key, "one signed manifest, one key, whatever the body")
		require.NotEqual(t, first[0].Fingerprint, second[0].Fingerprint, "a different body is 422, never a new event")
	})
	t.Run("mercadopago lower-cases an alphanumeric data.id", func(t *testing.T) {
		s := builtinSpec(t, "mercadopago")
		p, err := s.New([]string{"mp_secret"}, nil, nil)
		require.NoError(t, err)
		d, err := p.Sign(gatewayFixtures(t, "mercadopago")["order_processed.json"])
		require.NoError(t, err)
		require.Equal(t, "ORD01JWH3K9B7E3H9L5P1S7V3Y9C5", d.Query.Get("data.id"))
		items, err := p.Parse(d)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(items[0].Key, "ord01jwh3k9b7e3h9l5p1s7v3y9c5:"), items[0].Key)
	})
	t.Run("mercadopago reads one manifest one way", func(t *testing.T) {
		s := builtinSpec(t, "mercadopago")
		p, err := s.New([]string{"mp_secret"}, nil, nil)
		require.NoError(t, err)
		src := providers.Delivery{Header: http.Header{}, Query: url.Values{}}
		src.Header.Set("X-Request-Id", "c")
		src.Header.Set("X-Signature", "ts=1742505638683")
		// A value holding the manifest's own separator: the same manifest
		// reads as id "a;request-id:b", request-id "c" and as id "a",
		// request-id "b;request-id:c".
		src.Query.Set("data.id", "a;request-id:b")
		genuine, err := p.Resign(src, []byte(`{"action":"payment.updated","data":{"id":"1"}}`))
		require.NoError(t, err)
		moved := clone(genuine)
		moved.Query.Set("data.id", "a")
		moved.Header.Set("X-Request-Id", "b;request-id:c")
		for _, d := range []providers.Delivery{genuine, moved} {
			require.NoError(t, p.Verify(ctx, d), "one manifest, one signature")
			_, err := p.Parse(d)
			require.ErrorIs(t, err, ErrNoEventKey)
			require.ErrorIs(t, err, providers.ErrMalformed)
		}
		ok, err := p.Parse(gatewaySigned(t, p))
		require.NoError(t, err)
		require.Len(t, ok, 1)
	})
	t.Run("mercadopago keys split back one way", func(t *testing.T) {
		s := builtinSpec(t, "mercadopago")
		p, err := s.New([]string{"mp_secret"}, nil, nil)
		require.NoError(t, err)
		body := []byte(`{"action":"payment.updated","data":{"id":"1"}}`)
		signed := func(id, rid string) providers.Delivery {
			src := providers.Delivery{Header: http.Header{}, Query: url.Values{}}
			src.Header.Set("X-Request-Id", rid)
			src.Header.Set("X-Signature", "ts=1742505638683")
			src.Query.Set("data.id", id)
			d, err := p.Resign(src, body)
			require.NoError(t, err)
			require.NoError(t, p.Verify(ctx, d))
			return d
		}
		// Both are signed by Mercado Pago's scheme and would key to
		// x:1:2: the second would be answered as a replay of the first.
		_, err = p.Parse(signed("X:1", "2"))
		require.ErrorIs(t, err, ErrNoEventKey)
		require.ErrorContains(t, err, `query.data.id holds one of ":", which separate the key's values`)
		items, err := p.Parse(signed("X", "1:2"))
		require.NoError(t, err, "the last value takes the rest")
		require.Equal(t, "x:1:2", items[0].Key)
	})
	t.Run("mercadopago bounds its signed ts", func(t *testing.T) {
		s := builtinSpec(t, "mercadopago")
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		p, err := s.New([]string{"mp_secret"}, nil, func() time.Time { return now }, WithRetention(168*time.Hour))
		require.NoError(t, err)
		signedAt := func(ts string) providers.Delivery {
			src := gatewaySigned(t, p)
			src.Header.Set("X-Signature", "ts="+ts)
			d, err := p.Resign(src, src.Body)
			require.NoError(t, err)
			// Resign stamps the clock's time: put ts back, signed.
			d.Header.Set("X-Signature", "ts="+ts+",v1="+hmacHex("mp_secret",
				"id:"+strings.ToLower(d.Query.Get("data.id"))+";request-id:"+d.Header.Get("X-Request-Id")+";ts:"+ts+";"))
			return d
		}
		for _, tc := range []struct {
			name string
			ts   string
			err  error
		}{
			{"now, in ms", strconv.FormatInt(now.UnixMilli(), 10), nil},
			{"now, in seconds", strconv.FormatInt(now.Unix(), 10), nil},
			{"6 days ago", strconv.FormatInt(now.Add(-6*24*time.Hour).UnixMilli(), 10), nil},
			{"a second past the retention", strconv.FormatInt(now.Add(-168*time.Hour-time.Second).UnixMilli(), 10), ErrExpired},
			{"8 days ago", strconv.FormatInt(now.Add(-8*24*time.Hour).UnixMilli(), 10), ErrExpired},
			{"8 days ago, in seconds", strconv.FormatInt(now.Add(-8*24*time.Hour).Unix(), 10), ErrExpired},
			{"1970", "1000", ErrExpired},
			{"ahead of the clock", strconv.FormatInt(now.Add(time.Hour).UnixMilli(), 10), nil},
			{"not a number", "yesterday", ErrInvalidTimestamp},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := p.Verify(ctx, signedAt(tc.ts))
				if tc.err == nil {
					require.NoError(t, err)
					return
				}
				require.ErrorIs(t, err, tc.err)
				require.ErrorIs(t, err, providers.ErrUnauthorized)
			})
		}
	})
	t.Run("mercadopago gets the retention from its settings", func(t *testing.T) {
		s := builtinSpec(t, "mercadopago")
		st := s.Entry().Settings().(*Settings)
		require.NoError(t, st.Variables()[0].Set("mp_secret"))
		require.NoError(t, st.Check(providers.Env{Var: func(n string) string { return "WEBHOOKD_" + n }, Retention: 48 * time.Hour}))
		p, err := st.Build()
		require.NoError(t, err)
		signer, err := s.New([]string{"mp_secret"}, nil, func() time.Time { return time.Now().Add(-72 * time.Hour) })
		require.NoError(t, err)
		old := gatewaySigned(t, signer)
		require.ErrorIs(t, p.Verify(ctx, old), ErrExpired, "signed 3 days ago, retention 2 days")
		require.NoError(t, p.Verify(ctx, gatewaySigned(t, p.(*Provider))))
	})
	t.Run("mercadopago query and header variants", func(t *testing.T) {
		s := builtinSpec(t, "mercadopago")
		p, err := s.New([]string{"mp_secret"}, nil, nil)
		require.NoError(t, err)
		d := gatewaySigned(t, p)
		want, err := p.Parse(d)
		require.NoError(t, err)
		id, rid := d.Query.Get("data.id"), d.Header.Get("X-Request-Id")
		tests := []struct {
			name  string
			query string
			rids  []string
			err   error // nil: verifies, same key
		}{
			{"as sent", "data.id=" + id, []string{rid}, nil},
			{"name percent-encoded", "data%2Eid=" + id, []string{rid}, nil},
			{"value percent-encoded", "data.id=%" + fmt.Sprintf("%X", id[0]) + id[1:], []string{rid}, nil},
			{"another case is another name", "data.id=" + id + "&data.ID=999", []string{rid}, nil},
			{"data.id twice, same value", "data.id=" + id + "&data.id=" + id, []string{rid}, ErrMissingPart},
			{"data.id twice, two spellings", "data.id=" + id + "&data%2Eid=999", []string{rid}, ErrMissingPart},
			{"semicolon pair dropped", "data.id=" + id + ";x=1", []string{rid}, ErrMissingPart},
			{"x-request-id twice", "data.id=" + id, []string{rid, rid}, ErrMissingPart},
		}
		for _, tt := range tests {
			c := clone(d)
			q, _ := url.ParseQuery(tt.query) // as net/http's URL.Query
			c.Query = q
			c.Header["X-Request-Id"] = tt.rids
			err := p.Verify(ctx, c)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err, tt.name)
				continue
			}
			require.NoError(t, err, tt.name)
			got, err := p.Parse(c)
			require.NoError(t, err, tt.name)
			require.Equal(t, want[0].Key, got[0].Key, tt.name)
		}
	})
	t.Run("coinbase keeps one event across attempts", func(t *testing.T) {
		s := builtinSpec(t, "coinbase")
		p, err := s.New([]string{"cb_secret"}, nil, nil)
		require.NoError(t, err)
		body := gatewayFixtures(t, "coinbase")["charge_confirmed_retry.json"]
		retry := bytes.Replace(body, []byte(`"attempt_number": 3`), []byte(`"attempt_number": 4`), 1)
		retry = bytes.Replace(retry, []byte(`"scheduled_for": "2025-06-02T09:48:40Z"`), []byte(`"scheduled_for": "2025-06-02T10:48:40Z"`), 1)
		require.NotEqual(t, body, retry)
		a, err := p.Sign(body)
		require.NoError(t, err)
		b, err := p.Sign(retry)
		require.NoError(t, err)
		first, err := p.Parse(a)
		require.NoError(t, err)
		second, err := p.Parse(b)
		require.NoError(t, err)
		require.Equal(t, first[0].Key, second[0].Key)
		require.Equal(t, first[0].Fingerprint, second[0].Fingerprint, "a retry is replayed, never 422")
	})
}

func TestGatewayRotationHeaders(t *testing.T) {
	ctx := context.Background()
	body := gatewayFixtures(t, "mollie")["payment_link_paid.json"]
	s := builtinSpec(t, "mollie")
	oldP, err := s.New([]string{"old-mollie-secret"}, nil, nil)
	require.NoError(t, err)
	newP, err := s.New([]string{"new-mollie-secret"}, nil, nil)
	require.NoError(t, err)
	a, err := oldP.Sign(body)
	require.NoError(t, err)
	b, err := newP.Sign(body)
	require.NoError(t, err)
	// While Mollie rotates a secret it sends one X-Mollie-Signature per secret.
	d := providers.Delivery{Header: http.Header{"X-Mollie-Signature": {
		a.Header.Get("X-Mollie-Signature"), b.Header.Get("X-Mollie-Signature"),
	}}, Body: body}
	require.NoError(t, oldP.Verify(ctx, d), "a receiver still on the old secret")
	require.NoError(t, newP.Verify(ctx, d), "a receiver already on the new secret")
	d.Header["X-Mollie-Signature"] = []string{a.Header.Get("X-Mollie-Signature")}
	require.ErrorIs(t, newP.Verify(ctx, d), providers.ErrUnauthorized)
	unprefixed := strings.TrimPrefix(b.Header.Get("X-Mollie-Signature"), "sha256=")
	d.Header["X-Mollie-Signature"] = []string{unprefixed}
	require.NoError(t, newP.Verify(ctx, d), "the sha256= prefix is optional, as in mollie-api-php")
	d.Header["X-Mollie-Signature"] = []string{"sha256=" + strings.Repeat("0", len(unprefixed))}
	require.ErrorIs(t, newP.Verify(ctx, d), providers.ErrUnauthorized)
}

func TestAirwallexTolerance(t *testing.T) {
	ctx := context.Background()
	s := builtinSpec(t, "airwallex")
	body := gatewayFixtures(t, "airwallex")["refund_settled.json"]
	signedAt := time.Date(2025, 6, 5, 2, 0, 3, 0, time.UTC)
	signer, err := s.New([]string{"aw_secret"}, nil, func() time.Time { return signedAt })
	require.NoError(t, err)
	d, err := signer.Sign(body)
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		skew    time.Duration
		wantErr error
	}{
		{"just sent", time.Second, nil},
		{"within the default five minutes", 4 * time.Minute, nil},
		{"older than the tolerance", 6 * time.Minute, ErrTooOld},
		{"ahead of the clock", -6 * time.Minute, ErrTooNew},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s.New([]string{"aw_secret"}, nil, func() time.Time { return signedAt.Add(tc.skew) })
			require.NoError(t, err)
			err = p.Verify(ctx, d)
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
		})
	}
}

// hmacHex is the lowercase hex HMAC-SHA256 of text under secret.
func hmacHex(secret, text string) string {
	return hex.EncodeToString(mac(sha256.New, secret, text))
}
