package spec

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// compileYAML compiles a spec without running its examples, so that a
// test can sign its own deliveries.
func compileYAML(t *testing.T, y string) *Spec {
	t.Helper()
	f, err := decode([]byte(y))
	require.NoError(t, err)
	s, err := compile(f)
	require.NoError(t, err)
	return s
}

func newProvider(t *testing.T, s *Spec, secrets []string, settings map[string]string, now time.Time) *Provider {
	t.Helper()
	p, err := s.New(secrets, settings, func() time.Time { return now })
	require.NoError(t, err)
	return p
}

func mac(h func() hash.Hash, key string, parts ...string) []byte {
	m := hmac.New(h, []byte(key))
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

// acmeSpec signs a setting, a signature item, a header and the body.
const acmeSpec = `
name: acme
secrets: {variable: SECRETS}
settings:
  - {variable: TOLERANCE, type: duration, default: 5m, help: how old}
  - {variable: URL, default: "https://example.com/hook", help: the URL}
signature:
  header: Acme-Signature
  separator: ","
  assign: "="
  name: v1
  algorithm: hmac-sha256
  encoding: hex
  signed: "{{setting.URL}}|{{signature.t}}|{{header.X-Acme-Id}}|{{body}}"
timestamp: {value: "{{signature.t}}", tolerance: TOLERANCE, window: both}
event: {key: "{{json.id}}", type: "{{json.type}}"}
examples:
  - secret: x
    now: 2024-01-01T00:00:00Z
    headers: {Acme-Signature: "t=1,v1=00", X-Acme-Id: abc}
    body: "{}"
`

// TestVerify checks the engine against HMACs computed here, independently
// of it, and each way a delivery is refused.
func TestVerify(t *testing.T) {
	s := compileYAML(t, acmeSpec)
	now := time.Unix(1_700_000_000, 0)
	p := newProvider(t, s, []string{"sec_new", "sec_old"}, nil, now)
	body := `{"id":"evt_1","type":"paid"}`
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := func(key, ts, body string) string {
		return hex.EncodeToString(mac(sha256.New, key, "https://example.com/hook|", ts, "|abc|", body))
	}
	delivery := func(header string) providers.Delivery {
		return providers.Delivery{Header: http.Header{"Acme-Signature": {header}, "X-Acme-Id": {"abc"}}, Body: []byte(body)}
	}
	good := "t=" + ts + ",v1=" + sig("sec_new", ts, body)
	tests := []struct {
		name string
		d    providers.Delivery
		want error
	}{
		{"signed", delivery(good), nil},
		{"old secret, during a rotation", delivery("t=" + ts + ",v1=" + sig("sec_old", ts, body)), nil},
		{"upper-case hex", delivery("t=" + ts + ",v1=" + strings.ToUpper(sig("sec_new", ts, body))), nil},
		{"two signatures, the second good", delivery("t=" + ts + ",v1=" + sig("other", ts, body) + ", v1=" + sig("sec_new", ts, body)), nil},
		{"unknown items ignored", delivery("v0=zz,t=" + ts + ",junk,v1=" + sig("sec_new", ts, body)), nil},
		{"other secret", delivery("t=" + ts + ",v1=" + sig("other", ts, body)), ErrNoValidSignature},
		{"tampered body", func() providers.Delivery { d := delivery(good); d.Body = []byte(body + " "); return d }(), ErrNoValidSignature},
		{"no signature item", delivery("t=" + ts), ErrNoValidSignature},
		{"no header", providers.Delivery{Header: http.Header{"X-Acme-Id": {"abc"}}, Body: []byte(body)}, ErrNotSigned},
		{"empty header", delivery(""), ErrNotSigned},
		{"header twice", func() providers.Delivery { d := delivery(good); d.Header.Add("Acme-Signature", good); return d }(), ErrInvalidHeader},
		{"timestamp twice", delivery("t=" + ts + ",t=" + ts + ",v1=" + sig("sec_new", ts, body)), ErrInvalidHeader},
		{"header too long", delivery(good + ",v0=" + strings.Repeat("a", MaxHeaderBytes)), ErrInvalidHeader},
		{"no timestamp", delivery("v1=" + sig("sec_new", ts, body)), ErrMissingPart},
		{"signed header missing", func() providers.Delivery { d := delivery(good); d.Header.Del("X-Acme-Id"); return d }(), ErrMissingPart},
		{"signed header twice", func() providers.Delivery { d := delivery(good); d.Header.Add("X-Acme-Id", "abc"); return d }(), ErrMissingPart},
		{"timestamp not a number", delivery("t=+" + ts + ",v1=" + sig("sec_new", "+"+ts, body)), ErrInvalidTimestamp},
		{"too old", delivery("t=" + strconv.FormatInt(now.Unix()-301, 10) + ",v1=" + sig("sec_new", strconv.FormatInt(now.Unix()-301, 10), body)), ErrTooOld},
		{"too far ahead", delivery("t=" + strconv.FormatInt(now.Unix()+301, 10) + ",v1=" + sig("sec_new", strconv.FormatInt(now.Unix()+301, 10), body)), ErrTooNew},
		{"a little ahead", delivery("t=" + strconv.FormatInt(now.Unix()+299, 10) + ",v1=" + sig("sec_new", strconv.FormatInt(now.Unix()+299, 10), body)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Verify(context.Background(), tt.d)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
			require.True(t, strings.HasPrefix(err.Error(), "delivery not authenticated: acme: "), err.Error())
			require.NotContains(t, err.Error(), "sec_")
		})
	}
}

// TestSchemes covers each algorithm, encoding and header layout with a
// MAC computed here.
func TestSchemes(t *testing.T) {
	body := `{"id":"evt_1","event":"paid"}`
	tests := []struct {
		name      string
		signature string // the spec's signature block
		extra     string // more of the spec
		header    http.Header
		query     url.Values
	}{
		{"sha1 base64, body only", `{header: X-Sig, algorithm: hmac-sha1, encoding: base64, signed: "{{body}}"}`, "",
			http.Header{"X-Sig": {base64.StdEncoding.EncodeToString(mac(sha1.New, "k", body))}}, nil},
		{"sha512 hex", `{header: X-Sig, algorithm: hmac-sha512, encoding: hex, signed: "{{body}}"}`, "",
			http.Header{"X-Sig": {hex.EncodeToString(mac(sha512.New, "k", body))}}, nil},
		{"base64url without padding", `{header: X-Sig, algorithm: hmac-sha256, encoding: base64url, signed: "{{body}}"}`, "",
			http.Header{"X-Sig": {base64.RawURLEncoding.EncodeToString(mac(sha256.New, "k", body))}}, nil},
		{"base64url with padding", `{header: X-Sig, algorithm: hmac-sha256, encoding: base64url, signed: "{{body}}"}`, "",
			http.Header{"X-Sig": {base64.URLEncoding.EncodeToString(mac(sha256.New, "k", body))}}, nil},
		{"prefix, repeated header", `{header: X-Sig, repeated: true, prefix: "sha256=", algorithm: hmac-sha256, encoding: hex, signed: "{{body}}"}`, "",
			http.Header{"X-Sig": {"sha256=00", "sha256=" + hex.EncodeToString(mac(sha256.New, "k", body))}}, nil},
		{"optional prefix left out", `{header: X-Sig, prefix: "sha256=", prefix_optional: true, algorithm: hmac-sha256, encoding: hex, signed: "{{body}}"}`, "",
			http.Header{"X-Sig": {hex.EncodeToString(mac(sha256.New, "k", body))}}, nil},
		{"prefix, list", `{header: X-Sig, separator: ",", prefix: "sha256=", algorithm: hmac-sha256, encoding: hex, signed: "{{body}}"}`, "",
			http.Header{"X-Sig": {"sha256=00, sha256=" + hex.EncodeToString(mac(sha256.New, "k", body))}}, nil},
		{"standard webhooks layout", `{header: Webhook-Signature, separator: " ", assign: ",", name: v1, algorithm: hmac-sha256, encoding: base64, signed: "{{header.webhook-id}}.{{body}}"}`, "",
			http.Header{"Webhook-Signature": {"v1,AAAA v1," + base64.StdEncoding.EncodeToString(mac(sha256.New, "k", "msg_1.", body))}, "Webhook-Id": {"msg_1"}}, nil},
		{"query, lower-cased", `{header: X-Sig, algorithm: hmac-sha256, encoding: hex, signed: "id:{{query.data.id | lower}};{{body}}"}`, "",
			http.Header{"X-Sig": {hex.EncodeToString(mac(sha256.New, "k", "id:abc;", body))}}, url.Values{"data.id": {"ABC"}}},
		{"token", `{header: X-Token, algorithm: token}`, "",
			http.Header{"X-Token": {"k"}}, nil},
		{"token with prefix", `{header: Authorization, prefix: "Bearer ", algorithm: token}`, "",
			http.Header{"Authorization": {"Bearer k"}}, nil},
		{"timestamp in ms from a header", `{header: X-Sig, algorithm: hmac-sha256, encoding: hex, signed: "{{header.x-timestamp}}{{body}}"}`,
			"settings: [{variable: TOLERANCE, type: duration, default: 5m, help: h}]\ntimestamp: {value: \"{{header.x-timestamp}}\", unit: ms, tolerance: TOLERANCE}\n",
			http.Header{"X-Sig": {hex.EncodeToString(mac(sha256.New, "k", "1700000000000", body))}, "X-Timestamp": {"1700000000000"}}, nil},
		{"hex secret", `{header: X-Sig, algorithm: hmac-sha256, encoding: hex, signed: "{{body}}"}`, "",
			http.Header{"X-Sig": {hex.EncodeToString(mac(sha256.New, "k", body))}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ex strings.Builder
			for k := range tt.header {
				ex.WriteString("      " + k + ": x\n")
			}
			y := "name: acme\nsecrets: {variable: SECRETS}\nsignature: " + tt.signature + "\n" + tt.extra +
				"event: {key: \"{{json.id}}\", type: \"{{json.event}}\"}\nexamples:\n  - secret: x\n    now: 2024-01-01T00:00:00Z\n    body: '{}'\n    url: https://example.com/?data.id=abc\n    headers:\n" + ex.String()
			secret, other := "k", "other"
			if tt.name == "hex secret" {
				other = "6C"
				y = strings.Replace(y, "{variable: SECRETS}", "{variable: SECRETS, encoding: hex}", 1)
				secret = "6B"
			}
			s := compileYAML(t, y)
			p := newProvider(t, s, []string{other, secret}, nil, time.UnixMilli(1_700_000_000_000))
			d := providers.Delivery{Header: tt.header, Query: tt.query, Body: []byte(body)}
			require.NoError(t, p.Verify(context.Background(), d))
			items, err := p.Parse(d)
			require.NoError(t, err)
			require.Equal(t, "evt_1", items[0].Key)
			require.Equal(t, "paid", items[0].Type)

			if s.sig.alg.hash != nil {
				d.Body = []byte(body + " ")
				require.ErrorIs(t, p.Verify(context.Background(), d), ErrNoValidSignature)
			}
			wrong := newProvider(t, s, []string{"6C"}, nil, time.UnixMilli(1_700_000_000_000))
			require.ErrorIs(t, wrong.Verify(context.Background(), providers.Delivery{Header: tt.header, Query: tt.query, Body: []byte(body)}), ErrNoValidSignature)

			// What Sign makes, Verify accepts.
			signer := newProvider(t, s, []string{secret}, nil, time.UnixMilli(1_700_000_000_000))
			signed, err := signer.Sign([]byte(body))
			require.NoError(t, err)
			require.NoError(t, p.Verify(context.Background(), signed))
		})
	}
}

// TestSignVerifiesAndRotates: a delivery Sign makes with the old secret
// verifies under a rotation's [new, old], and not under [new] alone.
func TestSignVerifiesAndRotates(t *testing.T) {
	s := compileYAML(t, acmeSpec)
	now := time.Unix(1_700_000_000, 0)
	old := newProvider(t, s, []string{"sec_old"}, nil, now)
	d, err := old.Sign([]byte(`{"id":"evt_1"}`))
	require.NoError(t, err)
	require.Equal(t, "abc", d.Header.Get("X-Acme-Id"), "copied from the example")
	require.NoError(t, newProvider(t, s, []string{"sec_new", "sec_old"}, nil, now).Verify(context.Background(), d))
	require.ErrorIs(t, newProvider(t, s, []string{"sec_new"}, nil, now).Verify(context.Background(), d), ErrNoValidSignature)
	// A setting is signed: another URL is another signature.
	other := newProvider(t, s, []string{"sec_old"}, map[string]string{"URL": "https://example.com/other"}, now)
	require.ErrorIs(t, other.Verify(context.Background(), d), ErrNoValidSignature)
}

func TestNewRefusesSecrets(t *testing.T) {
	s := compileYAML(t, acmeSpec)
	for _, secrets := range [][]string{nil, {""}, {"a", " b"}} {
		_, err := s.New(secrets, nil, nil)
		require.Error(t, err)
	}
	_, err := s.New([]string{"a"}, map[string]string{"TOLERANCE": "0s"}, nil)
	require.ErrorContains(t, err, "TOLERANCE must be a positive duration")
}

func TestZeroProvider(t *testing.T) {
	var p Provider
	require.ErrorIs(t, p.Verify(context.Background(), providers.Delivery{}), providers.ErrUnauthorized)
	_, err := p.Parse(providers.Delivery{})
	require.ErrorIs(t, err, providers.ErrMalformed)
	_, err = p.Sign([]byte(`{}`))
	require.Error(t, err)
	require.Nil(t, p.Ack())
	require.Empty(t, p.Name())
}

// TestReplayHeaders: replay may set a header the signature does not cover
// (a topic, for the event type), constant or from the body.
func TestReplayHeaders(t *testing.T) {
	s := compileYAML(t, `
name: acme
secrets: {variable: SECRETS}
signature: {header: X-Sig, algorithm: hmac-sha256, encoding: hex, signed: "{{body}}"}
event: {key: "{{json.id}}", type: "{{header.X-Topic}}"}
replay: {headers: {X-Topic: orders/create, X-Id: "{{json.id}}"}}
examples: [{secret: x, body: '{}', headers: {X-Sig: "00"}}]
`)
	p := newProvider(t, s, []string{"k"}, nil, time.Now())
	d, err := p.Sign([]byte(`{"id":"o1"}`))
	require.NoError(t, err)
	require.Equal(t, "orders/create", d.Header.Get("X-Topic"))
	require.Equal(t, "o1", d.Header.Get("X-Id"))
	items, err := p.Parse(d)
	require.NoError(t, err)
	require.Equal(t, "orders/create", items[0].Type)
}

// TestConcurrentUse: one Provider serves many requests at once (its MAC
// states and scratch buffers are pooled); run with -race.
func TestConcurrentUse(t *testing.T) {
	s := compileYAML(t, acmeSpec)
	now := time.Unix(1_700_000_000, 0)
	p := newProvider(t, s, []string{"k1", "k2"}, nil, now)
	var deliveries []providers.Delivery
	for i := range 8 {
		d, err := p.Sign([]byte(`{"id":"evt_` + strconv.Itoa(i) + `"}`))
		require.NoError(t, err)
		deliveries = append(deliveries, d)
	}
	errs := make(chan error, len(deliveries))
	for i, d := range deliveries {
		go func() {
			for range 50 {
				if err := p.Verify(context.Background(), d); err != nil {
					errs <- err
					return
				}
				items, err := p.Parse(d)
				if err != nil || items[0].Key != "evt_"+strconv.Itoa(i) {
					errs <- fmt.Errorf("parse %d: %v %v", i, items, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range deliveries {
		require.NoError(t, <-errs)
	}
}
