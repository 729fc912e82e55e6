package spec

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// The Standard Webhooks reference library's signing vector
// (libraries/go/webhook_test.go, TestWebhookSign), builtin/standard.yaml's
// first example.
const (
	stdVecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	stdVecID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	stdVecTS     = "1614265330"
	stdVecBody   = `{"test": 2432232314}`
	stdVecSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var stdVecNow = time.Unix(1614265330, 0)

// stdOtherSpelling is stdVecSig with the unused low bits of its last
// base64 digit set: a lenient decoder reads it as the same MAC, so it must
// be refused as another signature.
const stdOtherSpelling = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OG="

func stdHeader(names ...string) http.Header {
	if len(names) == 0 {
		names = []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"}
	}
	h := http.Header{}
	h.Set(names[0], stdVecID)
	h.Set(names[1], stdVecTS)
	h.Set(names[2], stdVecSig)
	return h
}

var svixNames = []string{"Svix-Id", "Svix-Timestamp", "Svix-Signature"}

func newStandard(t *testing.T, now time.Time, secrets ...string) *Provider {
	t.Helper()
	if len(secrets) == 0 {
		secrets = []string{stdVecSecret}
	}
	p, err := builtinSpec(t, "standard").New(secrets, nil, func() time.Time { return now })
	require.NoError(t, err)
	return p
}

// TestStandardVerify walks the reference library's negative cases and the
// rules of a header read under two names (signature.header.aliases and
// headers), on builtin/standard.yaml.
func TestStandardVerify(t *testing.T) {
	body := []byte(stdVecBody)
	bad := "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
	with := func(f func(h http.Header)) http.Header {
		h := stdHeader()
		f(h)
		return h
	}
	tol := 5 * time.Minute
	tests := []struct {
		name   string
		header http.Header
		body   []byte
		now    time.Time
		want   error
	}{
		{"vector", stdHeader(), body, stdVecNow, nil},
		{"svix names", stdHeader(svixNames...), body, stdVecNow, nil},
		{"both sets, equal", with(func(h http.Header) {
			for k, v := range stdHeader(svixNames...) {
				h[k] = v
			}
		}), body, stdVecNow, nil},
		{"webhook-id empty, svix-id sent", with(func(h http.Header) { h.Set("Webhook-Id", ""); h.Set("Svix-Id", stdVecID) }), body, stdVecNow, nil},
		{"blank signature, svix-signature sent", with(func(h http.Header) { h.Set("Webhook-Signature", " "); h.Set("Svix-Signature", stdVecSig) }), body, stdVecNow, nil},
		{"valid among bad and unknown versions", with(func(h http.Header) { h.Set("Webhook-Signature", bad+" v2,"+bad[3:]+" "+stdVecSig+" "+bad) }), body, stdVecNow, nil},
		{"valid in a second header line", with(func(h http.Header) { h.Set("Webhook-Signature", bad); h.Add("Webhook-Signature", stdVecSig) }), body, stdVecNow, nil},
		{"exactly tolerance old", stdHeader(), body, stdVecNow.Add(tol), nil},
		{"exactly tolerance ahead", stdHeader(), body, stdVecNow.Add(-tol), nil},

		{"no id", with(func(h http.Header) { h.Del("Webhook-Id") }), body, stdVecNow, ErrMissingPart},
		{"no timestamp", with(func(h http.Header) { h.Del("Webhook-Timestamp") }), body, stdVecNow, ErrMissingPart},
		{"no signature", with(func(h http.Header) { h.Del("Webhook-Signature") }), body, stdVecNow, ErrNotSigned},
		{"blank signature", with(func(h http.Header) { h.Set("Webhook-Signature", "   ") }), body, stdVecNow, ErrNotSigned},
		{"no headers", nil, body, stdVecNow, ErrNotSigned},
		{"v1, with an empty signature", with(func(h http.Header) { h.Set("Webhook-Signature", "v1,") }), body, stdVecNow, ErrNoValidSignature},
		{"one second too old", stdHeader(), body, stdVecNow.Add(tol + time.Second), ErrTooOld},
		{"one second too new", stdHeader(), body, stdVecNow.Add(-tol - time.Second), ErrTooNew},
		{"an hour old, wrong signature: the age is checked first", with(func(h http.Header) { h.Set("Webhook-Signature", bad) }), body, stdVecNow.Add(time.Hour), ErrTooOld},

		{"body one byte changed", stdHeader(), []byte(`{"test": 2432232315}`), stdVecNow, ErrNoValidSignature},
		{"another id", with(func(h http.Header) { h.Set("Webhook-Id", stdVecID+"x") }), body, stdVecNow, ErrNoValidSignature},
		{"leading zero in the timestamp", with(func(h http.Header) { h.Set("Webhook-Timestamp", "0"+stdVecTS) }), body, stdVecNow, ErrNoValidSignature},
		{"v1a is not v1", with(func(h http.Header) { h.Set("Webhook-Signature", "v1a,"+stdVecSig[3:]) }), body, stdVecNow, ErrNoValidSignature},
		{"no version", with(func(h http.Header) { h.Set("Webhook-Signature", stdVecSig[3:]) }), body, stdVecNow, ErrNoValidSignature},
		{"another spelling of the signature's base64", with(func(h http.Header) { h.Set("Webhook-Signature", stdOtherSpelling) }), body, stdVecNow, ErrNoValidSignature},

		{"two ids", with(func(h http.Header) { h.Add("Webhook-Id", "msg_2") }), body, stdVecNow, ErrInvalidHeader},
		{"two timestamps", with(func(h http.Header) { h.Add("Webhook-Timestamp", stdVecTS) }), body, stdVecNow, ErrInvalidHeader},
		{"webhook-id and svix-id differ", with(func(h http.Header) { h.Set("Svix-Id", "msg_other") }), body, stdVecNow, ErrInvalidHeader},
		{"timestamps differ", with(func(h http.Header) { h.Set("Svix-Timestamp", "1614265331") }), body, stdVecNow, ErrInvalidHeader},
		{"signature lists differ", with(func(h http.Header) { h.Set("Svix-Signature", bad) }), body, stdVecNow, ErrInvalidHeader},
		{"timestamp not a number", with(func(h http.Header) { h.Set("Webhook-Timestamp", "soon") }), body, stdVecNow, ErrInvalidTimestamp},
		{"timestamp in milliseconds", with(func(h http.Header) { h.Set("Webhook-Timestamp", stdVecTS+"000") }), body, stdVecNow, ErrTooNew},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := newStandard(t, tt.now).Verify(context.Background(), providers.Delivery{Header: tt.header, Body: tt.body})
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			for _, s := range []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "g0hM9SsE", stdVecBody, stdVecID} {
				require.NotContains(t, err.Error(), s)
			}
		})
	}
}

// TestStandardParse walks the key, type and fingerprint rules of
// docs/contract.md for standard: the body may be any bytes (body: any),
// its type is read when it is a JSON object, and its fingerprint is its
// digest.
func TestStandardParse(t *testing.T) {
	long := strings.Repeat("a", MaxTokenBytes)
	id := func(v string) http.Header {
		h := stdHeader()
		h.Set("Webhook-Id", v)
		return h
	}
	tests := []struct {
		name              string
		header            http.Header
		body              string
		wantKey, wantType string
		wantErr           error
	}{
		{name: "webhook-id and type", header: stdHeader(), body: `{"type":"invoice.paid","data":{}}`, wantKey: stdVecID, wantType: "invoice.paid"},
		{name: "svix-id", header: stdHeader(svixNames...), body: `{"type":"invoice.paid"}`, wantKey: stdVecID, wantType: "invoice.paid"},
		{name: "JSON object without type", header: stdHeader(), body: stdVecBody, wantKey: stdVecID},
		{name: "null type", header: stdHeader(), body: `{"type":null}`, wantKey: stdVecID},
		{name: "empty type", header: stdHeader(), body: `{"type":""}`, wantKey: stdVecID},
		{name: "nested type is not the type", header: stdHeader(), body: `{"data":{"type":"x.y"}}`, wantKey: stdVecID},
		{name: "not JSON", header: stdHeader(), body: `plain text`, wantKey: stdVecID},
		{name: "empty body", header: stdHeader(), body: ``, wantKey: stdVecID},
		{name: "JSON array", header: stdHeader(), body: `[{"type":"invoice.paid"}]`, wantKey: stdVecID},
		{name: "broken JSON object", header: stdHeader(), body: `{"type":"invoice.paid"`, wantKey: stdVecID},
		{name: "id with a colon is one part", header: id("msg:1"), body: `{}`, wantKey: "msg:1"},
		{name: "longest id", header: id(long), body: `{}`, wantKey: long},
		{name: "no id", header: http.Header{"Webhook-Timestamp": {stdVecTS}}, body: `{}`, wantErr: ErrNoEventKey},
		{name: "id too long", header: id(long + "a"), body: `{}`, wantErr: ErrNoEventKey},
		{name: "id with a space", header: id("msg 1"), body: `{}`, wantErr: ErrNoEventKey},
		{name: "id with a dot: the signed text would read as another id", header: id("msg.1"), body: `{}`, wantErr: ErrNoEventKey},
		{name: "two ids", header: func() http.Header { h := stdHeader(); h.Add("Webhook-Id", "msg_2"); return h }(), body: `{}`, wantErr: ErrNoEventKey},
		{name: "ids differ", header: func() http.Header { h := stdHeader(); h.Set("Svix-Id", "msg_2"); return h }(), body: `{}`, wantErr: ErrNoEventKey},
		{name: "type with a space", header: stdHeader(), body: `{"type":"invoice paid"}`, wantErr: ErrInvalidType},
		{name: "type spelled only another way", header: stdHeader(), body: `{"Type":"invoice.paid"}`, wantErr: ErrInvalidType},
		{name: "type twice", header: stdHeader(), body: `{"type":"invoice.paid","TYPE":"invoice.voided"}`, wantErr: ErrNotJSON},
		{name: "nested member twice, long s (U+017F)", header: stdHeader(), body: `{"type":"a.b","data":{"status":"failed","ſtatus":"paid"}}`, wantErr: ErrNotJSON},
	}
	p := newStandard(t, stdVecNow)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, err := p.Parse(providers.Delivery{Header: tt.header, Body: []byte(tt.body)})
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorIs(t, err, providers.ErrMalformed)
				require.Empty(t, items)
				return
			}
			require.NoError(t, err)
			require.Len(t, items, 1)
			require.Equal(t, tt.wantKey, items[0].Key)
			require.Equal(t, tt.wantType, items[0].Type)
			sum := sha256.Sum256([]byte(tt.body))
			require.Equal(t, hex.EncodeToString(sum[:]), items[0].Fingerprint, "the body's bytes")
		})
	}
}

// TestStandardSign: a fixture is one message, named msg_ and the digest of
// its body, so sending it again is a retry of that message; another body
// is another message.
func TestStandardSign(t *testing.T) {
	p := newStandard(t, stdVecNow)
	d1, err := p.Sign([]byte(stdVecBody))
	require.NoError(t, err)
	d2, err := p.Sign([]byte(stdVecBody))
	require.NoError(t, err)
	require.Equal(t, d1.Header, d2.Header)
	sum := sha256.Sum256([]byte(stdVecBody))
	require.Equal(t, "msg_"+hex.EncodeToString(sum[:]), d1.Header.Get("Webhook-Id"))
	require.Equal(t, stdVecTS, d1.Header.Get("Webhook-Timestamp"))
	require.NoError(t, p.Verify(context.Background(), d1))
	d3, err := p.Sign([]byte("plain text"))
	require.NoError(t, err, "any body signs")
	require.NotEqual(t, d1.Header.Get("Webhook-Id"), d3.Header.Get("Webhook-Id"))
	require.NoError(t, p.Verify(context.Background(), d3))
}

// TestAliasAndAnyBodyGates: what header aliases and body: any are refused
// for.
func TestAliasAndAnyBodyGates(t *testing.T) {
	base := readSpec(t, "builtin/standard.yaml")
	for _, tc := range []struct{ name, old, new, want string }{
		{"aliases in v1", "version: 2\n", "", "needs version: 2"},
		{"alias not a header name", "aliases: [svix-id]", "aliases: [\"svix id\"]", `headers[0].aliases: "svix id" is not a header name`},
		{"alias is the header", "aliases: [svix-id]", "aliases: [Webhook-Id]", "headers[0].aliases: Webhook-Id is already a name"},
		{"alias of two headers", "aliases: [svix-timestamp]", "aliases: [svix-id]", "headers[1].aliases: svix-id is already a name"},
		{"alias is the signature header's", "aliases: [svix-timestamp]", "aliases: [svix-signature]", "svix-signature is already a name"},
		{"header declared twice", "  - {name: webhook-timestamp, aliases: [svix-timestamp]}", "  - {name: webhook-id, aliases: [svix-timestamp]}", "header Webhook-Id is declared twice"},
		{"header no template reads", "{name: webhook-id,", "{name: webhook-event,", "no template reads header webhook-event"},
		{"header without aliases", "{name: webhook-id, aliases: [svix-id]}", "{name: webhook-id}", "headers[0].aliases: required"},
		{"the signature header in headers", "{name: webhook-id,", "{name: webhook-signature,", "is the signature header: give its aliases in signature.header.aliases"},
		{"unknown header field", "aliases: [svix-signature]", "alias: [svix-signature]", "field alias not found in signature.header"},
		{"key from the body", `key: "{{header.webhook-id}}"`, `key: "{{json.id}}"`, "event.key: reads a JSON member, and with body: any"},
		{"fingerprint with any body", `type: "{{json.type}}"`, "type: \"{{json.type}}\"\n  fingerprint: [data]", "event.fingerprint: with body: any the fingerprint is the body's digest"},
		{"batch with any body", `type: "{{json.type}}"`, "type: \"{{json.type}}\"\n  batch: events", "event.batch: is for JSON bodies"},
		{"replay from the body", `webhook-id: "msg_{{digest}}"`, `webhook-id: "{{json.id}}"`, "replay.headers: reads a JSON member"},
		{"unknown body", "body: any", "body: bytes", `body: unknown "bytes" (json, form or any)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, base, tc.old)
			_, err := Load("standard.yaml", []byte(strings.Replace(base, tc.old, tc.new, 1)))
			require.ErrorContains(t, err, tc.want)
		})
	}
	// An alias the signed text reads under its own name.
	s := strings.Replace(base, `signed: "{{header.webhook-id}}.`, `signed: "{{header.svix-id}}.{{header.webhook-id}}.`, 1)
	_, err := Load("standard.yaml", []byte(s))
	require.ErrorContains(t, err, "Svix-Id is an alias of Webhook-Id, and is read under its own name too")
}

// FuzzStandardVerify checks that no headers or body make the standard
// spec's Verify panic, that every rejection is a 401, and that an accepted
// delivery carries the true signature of its own id, timestamp and body,
// in its one spelling.
func FuzzStandardVerify(f *testing.F) {
	f.Add(stdVecID, stdVecTS, stdVecSig, "", []byte(stdVecBody))
	f.Add(stdVecID, stdVecTS, stdOtherSpelling, " ", []byte(stdVecBody))
	f.Add("", "", "", stdVecSig, []byte(stdVecBody))
	f.Add(stdVecID, "0"+stdVecTS, stdVecSig, "", []byte(stdVecBody))
	f.Add(stdVecID, stdVecTS, "v1a,AAAA v1, v1,,, "+stdVecSig, stdVecSig, []byte(stdVecBody))
	f.Add("id", "-1", "v1,", "", []byte{})
	f.Add(stdVecID, "99999999999999999999", stdVecSig, "", []byte(nil))
	s, err := Builtin()
	if err != nil {
		f.Fatal(err)
	}
	var p *Provider
	for _, sp := range s {
		if sp.name == "standard" {
			p, err = sp.New([]string{stdVecSecret}, nil, func() time.Time { return stdVecNow })
		}
	}
	if p == nil || err != nil {
		f.Fatal("no standard spec", err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(stdVecSecret, "whsec_"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, id, ts, sig, svixSig string, body []byte) {
		h := http.Header{}
		h.Set("Webhook-Id", id)
		h.Set("Webhook-Timestamp", ts)
		h.Set("Webhook-Signature", sig)
		if svixSig != "" {
			h.Set("Svix-Signature", svixSig)
		}
		err := p.Verify(context.Background(), providers.Delivery{Header: h, Body: body})
		if err != nil {
			if !errors.Is(err, providers.ErrUnauthorized) {
				t.Fatalf("Verify error %v is not a 401", err)
			}
			return
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
		if !strings.Contains(" "+strings.Join(strings.Fields(sig+" "+svixSig), " ")+" ", " "+want+" ") {
			t.Fatalf("accepted %q, which lacks the message's signature", sig)
		}
	})
}
