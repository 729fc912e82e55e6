package spec

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// exampleNamed returns s's example called name.
func exampleNamed(t *testing.T, s *Spec, name string) example {
	t.Helper()
	for _, ex := range s.examples {
		if ex.name == name {
			return ex
		}
	}
	t.Fatalf("%s has no example %s", s.name, name)
	return example{}
}

// TestWinpayPublishedCallback: Winpay's published SNAP callback verifies
// (providers-sea reference §1.8) and keys as the contract says; it stops
// verifying when anything signed differs: the body as the page renders it
// (one space for four), every whitespace byte stripped, the path without
// its service path or under another listener path, the same instant
// written another way. Whitespace between tokens is not signed: the body
// re-indented still verifies.
func TestWinpayPublishedCallback(t *testing.T) {
	s := builtinSpec(t, "winpay")
	ex := exampleNamed(t, s, "winpay-published-callback")
	clock := func() time.Time { return ex.now }
	p, err := s.New([]string{ex.secret}, ex.settings, clock)
	require.NoError(t, err)
	d := providers.Delivery{Header: ex.header, Body: ex.body, Path: ex.path}
	ctx := context.Background()
	require.NoError(t, p.Verify(ctx, d))
	items, err := p.Parse(d)
	require.NoError(t, err)
	require.Equal(t, "45539:INV-000000023220", items[0].Key)
	require.Equal(t, "va.payment", items[0].Type)
	require.Contains(t, string(ex.body), `"partnerServiceId":"    9042"`)

	var indented bytes.Buffer
	require.NoError(t, json.Indent(&indented, ex.body, "", "    "))
	require.NoError(t, p.Verify(ctx, providers.Delivery{Header: ex.header, Body: indented.Bytes(), Path: ex.path}), "re-indented")

	at := func(header http.Header, body []byte, path string) error {
		return p.Verify(ctx, providers.Delivery{Header: header, Body: body, Path: path})
	}
	retimed := ex.header.Clone()
	retimed.Set("X-Timestamp", "2024-01-11T01:57:55Z")
	for name, err := range map[string]error{
		"rendered body":      at(ex.header, bytes.ReplaceAll(ex.body, []byte(`"    9042"`), []byte(`" 9042"`)), ex.path),
		"every space gone":   at(ex.header, bytes.ReplaceAll(ex.body, []byte(" "), nil), ex.path),
		"no service path":    at(ex.header, ex.body, ""),
		"other service path": at(ex.header, ex.body, "/v1.0/debit/notify"),
		"same instant, in Z": at(retimed, ex.body, ex.path),
	} {
		require.ErrorIs(t, err, ErrNoValidSignature, name)
	}
	other, err := s.New([]string{ex.secret}, map[string]string{"NOTIFICATION_PATH": "/webhooks/winpay", "ALLOW_WEAK_KEYS": "true"}, clock)
	require.NoError(t, err)
	require.ErrorIs(t, other.Verify(ctx, d), ErrNoValidSignature, "another notification path")

	bad := ex.header.Clone()
	bad.Set("X-Timestamp", "2024-01-11 08:57:55")
	require.ErrorIs(t, at(bad, ex.body, ex.path), ErrInvalidTimestamp)

	// The sandbox key is 1023 bits: refused unless allowed.
	_, err = s.New([]string{ex.secret}, map[string]string{"NOTIFICATION_PATH": "/sandbox_prod/url_listener.php"}, clock)
	require.ErrorIs(t, err, ErrWeakKey)
	require.ErrorContains(t, err, "1023 bits; WINPAY_ALLOW_WEAK_KEYS=true accepts it")
}

// TestWeakKeySettings: the variables refuse a weak key naming both
// variables and accept it, with a warning naming the key's variable and
// size, once allowed; a value with no key is an error naming the
// variable.
func TestWeakKeySettings(t *testing.T) {
	s := builtinSpec(t, "winpay")
	weak := exampleNamed(t, s, "winpay-published-callback").secret
	env := providers.Env{Var: func(n string) string { return "WEBHOOKD_" + n }, Retention: 168 * time.Hour}
	settings := func(vals map[string]string) *Settings {
		st := s.Entry().Settings().(*Settings)
		for _, v := range st.Variables() {
			if val, ok := vals[v.Name]; ok {
				require.NoError(t, v.Set(val), v.Name)
			}
		}
		return st
	}
	st := settings(map[string]string{"WINPAY_PUBLIC_KEYS": weak})
	require.EqualError(t, st.Check(env), "WEBHOOKD_WINPAY_PUBLIC_KEYS: RSA key shorter than 2048 bits (1023 bits; WEBHOOKD_WINPAY_ALLOW_WEAK_KEYS=true accepts it)")

	st = settings(map[string]string{"WINPAY_PUBLIC_KEYS": weak, "WINPAY_ALLOW_WEAK_KEYS": "true"})
	require.NoError(t, st.Check(env))
	require.Equal(t, []string{"WEBHOOKD_WINPAY_PUBLIC_KEYS: a 1023-bit RSA key is accepted (shorter than 2048 bits, allowed by WEBHOOKD_WINPAY_ALLOW_WEAK_KEYS)"}, st.Warnings(env))
	p, err := st.Build()
	require.NoError(t, err)
	require.Equal(t, 168*time.Hour, p.(*Provider).retention, "no tolerance: the retention bounds the timestamp")

	st = settings(map[string]string{"WINPAY_PUBLIC_KEYS": testSenderPEM("a")})
	require.NoError(t, st.Check(env))
	require.Empty(t, st.Warnings(env))

	st = settings(map[string]string{"WINPAY_PUBLIC_KEYS": "-----BEGIN NOTHING-----"})
	require.ErrorContains(t, st.Check(env), "WEBHOOKD_WINPAY_PUBLIC_KEYS: no public key can be read")
	st = settings(map[string]string{"WINPAY_PUBLIC_KEYS": filepath.Join(t.TempDir(), "absent.pem")})
	require.ErrorContains(t, st.Check(env), "WEBHOOKD_WINPAY_PUBLIC_KEYS: no public key can be read")

	for _, v := range st.Variables() {
		if v.Name == "WINPAY_ALLOW_WEAK_KEYS" {
			require.Error(t, v.Set("yes"))
		}
		if v.Name == "WINPAY_SERVICE_CODE" {
			require.Error(t, v.Set("5"))
			require.NoError(t, v.Set("56"))
		}
	}
}

// TestPublicKeyValues: every form a public-key variable takes (PEM text of
// several blocks, PUBLIC KEY, RSA PUBLIC KEY and CERTIFICATE blocks, a
// list of files) yields its keys, any of which verifies; a block of
// another kind of key, or of no key, is refused.
func TestPublicKeyValues(t *testing.T) {
	a, b := testSenderPEM("a"), testSenderPEM("b")
	signerA := testSenders()[a].(*rsa.PrivateKey)
	pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&signerA.PublicKey)}))
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "snap sender"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &signerA.PublicKey, signerA)
	require.NoError(t, err)
	cert := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	dir := t.TempDir()
	fileA, fileB := filepath.Join(dir, "a.pem"), filepath.Join(dir, "b.pem")
	require.NoError(t, os.WriteFile(fileA, []byte(a), 0o600))
	require.NoError(t, os.WriteFile(fileB, []byte(b+cert), 0o600))
	notPEM := filepath.Join(dir, "key.der")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a key"), 0o600))
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ecDER, err := x509.MarshalPKIXPublicKey(&ecKey.PublicKey)
	require.NoError(t, err)
	ecPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecDER}))

	for _, tc := range []struct {
		name, value string
		keys        int
		err         string
	}{
		{"two blocks", b + a, 2, ""},
		{"pkcs1", pkcs1, 1, ""},
		{"certificate", cert, 1, ""},
		{"files", fileA + ", " + fileB, 3, ""},
		{"another kind of key", ecPEM, 0, "holds a key of another kind"},
		{"a private key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", 0, `a "PRIVATE KEY" PEM block`},
		{"no block", "-----BEGIN", 0, "no PEM block"},
		{"an empty file name", fileA + ",", 0, "an empty file name"},
		{"a file without a block", fileA + "," + notPEM, 0, "key.der holds no PEM block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, _, err := readPublicKeys(tc.value, rsaPKCS1, false, "X_ALLOW_WEAK_KEYS")
			if tc.err != "" {
				require.ErrorIs(t, err, ErrNoPublicKey)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, keys, tc.keys)
			text := []byte("POST:/webhooks/snap:0:2024-01-01T00:00:00Z")
			sum := sha256Sum(text)
			sig, err := signerA.Sign(rand.Reader, sum, crypto.SHA256)
			require.NoError(t, err)
			require.True(t, verifyPublic(keys, rsaPKCS1, text, b64(sig), base64Encoding), "a verifies")
			require.False(t, verifyPublic(keys, rsaPKCS1, append(text, '1'), b64(sig), base64Encoding))
		})
	}
}

// curveSpec is a version 2 spec over a header and the body's digest,
// signed with algorithm.
func curveSpec(algorithm string) string {
	return `
version: 2
name: curve
secrets: {variable: PUBLIC_KEYS, encoding: pem}
signature:
  header: {name: X-Sig, prefix: "v1="}
  algorithm: ` + algorithm + `
  encoding: base64url
  signed: "{{header.X-Time}}.{{body | sha512}}"
timestamp: {value: "{{header.X-Time}}", format: rfc3339}
event: {key: "{{json.id}}"}
examples:
  - {secret: x, now: "2025-01-01T00:00:00Z", headers: {X-Sig: "v1=x", X-Time: "2025-01-01T00:00:00Z"}, body: "{}"}
`
}

// TestCurveSchemes: ecdsa-p256-sha256 and ed25519 verify what their keys
// signed, and nothing changed.
func TestCurveSchemes(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	for alg, signer := range map[string]crypto.Signer{"ecdsa-p256-sha256": ecKey, "ed25519": edKey} {
		t.Run(alg, func(t *testing.T) {
			s := compileYAML(t, curveSpec(alg))
			der, err := x509.MarshalPKIXPublicKey(signer.Public())
			require.NoError(t, err)
			pub := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			p := newProvider(t, s, []string{pub}, nil, now)
			p.signer = signer
			d, err := p.Sign([]byte(`{"id":"evt_1"}`))
			require.NoError(t, err)
			require.NoError(t, p.Verify(context.Background(), d))
			d.Body = []byte(`{"id":"evt_2"}`)
			require.ErrorIs(t, p.Verify(context.Background(), d), ErrNoValidSignature)

			p.signer = nil
			_, err = p.Sign(d.Body)
			require.ErrorIs(t, err, providers.ErrCannotSign, "webhookd holds no sender's private key")
		})
	}
}

// TestRetentionBoundsTimestamp: a timestamp without a tolerance is bounded
// by the retention, either way; unset (zero), only its format is checked.
func TestRetentionBoundsTimestamp(t *testing.T) {
	s := builtinSpec(t, "snap")
	ex := exampleNamed(t, s, "self-derived-2048")
	d := providers.Delivery{Header: ex.header, Body: ex.body, Path: ex.path}
	signedAt, err := time.Parse(time.RFC3339, ex.header.Get("X-Timestamp"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		skew   time.Duration
		maxAge time.Duration
		want   error
	}{
		{"within", 167 * time.Hour, 168 * time.Hour, nil},
		{"older than the retention", 169 * time.Hour, 168 * time.Hour, ErrExpired},
		{"ahead by more than the retention", -169 * time.Hour, 168 * time.Hour, ErrTooNew},
		{"no retention known", 10000 * time.Hour, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s.New([]string{ex.secret}, ex.settings, func() time.Time { return signedAt.Add(tc.skew) }, WithRetention(tc.maxAge))
			require.NoError(t, err)
			err = p.Verify(context.Background(), d)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// TestSnapAckAndCases: the acknowledgement carries the configured service
// code; the key is the first case whose references are all present, and a
// present but unusable part is 400, never the next case.
func TestSnapAckAndCases(t *testing.T) {
	s := builtinSpec(t, "snap")
	p, err := s.New([]string{testSenderPEM("a")}, map[string]string{"SERVICE_CODE": "56"}, nil)
	require.NoError(t, err)
	ack := p.Ack()
	require.Equal(t, 200, ack.Status)
	require.Equal(t, "application/json", ack.ContentType)
	require.JSONEq(t, `{"responseCode":"2005600","responseMessage":"Successful"}`, string(ack.Body))
	def, err := s.New([]string{testSenderPEM("a")}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, `{"responseCode":"2002500","responseMessage":"Successful"}`, string(def.Ack().Body))
	require.True(t, def.ServicePaths())

	for _, tc := range []struct{ body, key, typ string }{
		{`{"paymentRequestId":"PR-1","trxId":"INV-1","partnerServiceId":"  888994"}`, "PR-1:INV-1", "va.payment"},
		{`{"paymentRequestId":"PR-1"}`, "PR-1", "va.payment"},
		{`{"originalReferenceNo":"A1","latestTransactionStatus":"00"}`, "A1:00", "00"},
		{`{"virtualAccountNo":"  8889940001"}`, "", ""},
		// One case's key must not read as another's: PR-1:INV-1 is the
		// first case's key of (PR-1, INV-1), never the second's of
		// "PR-1:INV-1" (keySplits).
		{`{"paymentRequestId":"PR-1:INV-1"}`, "", ""},
		{`{"paymentRequestId":"PR-1","trxId":"INV:1"}`, "", ""},
		{`{"paymentRequestId":{"id":"PR-1"},"originalReferenceNo":"A1","latestTransactionStatus":"00"}`, "", ""},
	} {
		items, err := p.Parse(providers.Delivery{Body: []byte(tc.body)})
		if tc.key == "" {
			require.ErrorIs(t, err, ErrNoEventKey, tc.body)
			continue
		}
		require.NoError(t, err, tc.body)
		require.Equal(t, tc.key, items[0].Key)
		require.Equal(t, tc.typ, items[0].Type)
	}
}

// TestVersionGates: version 1 files load as before and refuse what
// version 2 adds; version 2 keeps the header grammar in its object.
func TestVersionGates(t *testing.T) {
	v2 := curveSpec("ed25519")
	for _, tc := range []struct {
		name, spec, old, new, want string
	}{
		{"unknown version", v2, "version: 2", "version: 3", "version: 3 is not 1 or 2"},
		{"v2 file as v1", v2, "version: 2", "version: 1", "secrets.encoding: needs version: 2"},
		{"loose knobs in v2", v2, `header: {name: X-Sig, prefix: "v1="}`, "header: {name: X-Sig}\n  prefix: \"v1=\"", "version 2 keeps repeated, separator"},
		{"header name in v2", v2, `header: {name: X-Sig, prefix: "v1="}`, "header: X-Sig", "version 2 writes the header as an object"},
		{"unknown header field", v2, `prefix: "v1="}`, `prefx: "v1="}`, "field prefx not found in signature.header"},
		{"partial items", v2, `prefix: "v1="}`, `items: {separator: ","}}`, "signature.header.items: separator, assign and name are all required"},
		{"compact alone", v2, "{{body | sha512}}", "{{body | compact}}", "must be followed by a digest"},
		{"digest of a header", v2, "{{header.X-Time}}.", "{{header.X-Time | sha256}}.", `filter "sha256" cannot follow "header.X-Time"`},
		{"pem for an hmac", v2, "algorithm: ed25519", "algorithm: hmac-sha256", "pem is for public-key algorithms"},
		{"hmac secrets for rsa", v2, "encoding: pem}", "}", "must be pem for ed25519"},
		{"rfc3339 with a unit", v2, "format: rfc3339}", "format: rfc3339, unit: ms}", "timestamp.unit: is for unix timestamps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, tc.spec, tc.old)
			f, err := decode([]byte(strings.Replace(tc.spec, tc.old, tc.new, 1)))
			if err == nil {
				_, err = compile(f)
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
	base := readSpec(t, docExample)
	for _, tc := range []struct{ name, old, new, want string }{
		{"rsa in v1", "algorithm: hmac-sha256", "algorithm: rsa-sha256", "signature.algorithm: needs version: 2"},
		{"header object in v1", "  header: Paddle-Signature", "  header: {name: Paddle-Signature}", "signature.header: an object needs version: 2"},
		{"pem in v1", "  noun: notification secret", "  noun: notification secret\n  encoding: pem", "secrets.encoding: needs version: 2"},
		{"digest in v1", `{{signature.ts}}:{{body}}`, `{{signature.ts}}:{{body | sha256}}`, "signature.signed: needs version: 2"},
		{"path in v1", `{{signature.ts}}:{{body}}`, `{{signature.ts}}:{{path}}{{body}}`, "signature.signed: needs version: 2"},
		{"rfc3339 in v1", "  unit: s", "  format: rfc3339", "timestamp.format: needs version: 2"},
		{"pattern in v1", "    default: 5m", "    default: 5m\n    pattern: \"[0-9]+m\"", "pattern: needs version: 2"},
		{"cases in v1", `  key: "{{json.event_id}}"`, "  cases: [{key: \"{{json.event_id}}\"}]\n  key: \"\"", "event.cases: needs version: 2"},
		{"ack in v1", "examples:", "ack: {status: 200}\nexamples:", "batch_body and ack are for batches only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, base, tc.old)
			_, err := Load("acme.yaml", []byte(strings.Replace(base, tc.old, tc.new, 1)))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestCompactKeepsStrings: compaction removes only the whitespace between
// tokens: inside strings, escaped quotes included, every byte stays.
func TestCompactKeepsStrings(t *testing.T) {
	for in, want := range map[string]string{
		"{ \"a\" : \"    9042\" ,\n\t\"b\":[ 1, 2 ] }\r\n": `{"a":"    9042","b":[1,2]}`,
		`{"q":"say \" a \\" , "z" : 1}`:                    `{"q":"say \" a \\","z":1}`,
		`{"u":"\u00e9 / x"}`:                               `{"u":"\u00e9 / x"}`,
	} {
		var out bytes.Buffer
		writeCompact(&out, []byte(in))
		require.Equal(t, want, out.String(), in)
	}
}

func sha256Sum(b []byte) []byte {
	sum := sha256.Sum256(b)
	return sum[:]
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestPaymongoMode: WEBHOOKD_PAYMONGO_MODE picks the signature item that
// is checked (li live, te test) and the other is ignored, whatever it
// holds; a mode that is not a choice is refused.
func TestPaymongoMode(t *testing.T) {
	s := builtinSpec(t, "paymongo")
	ex := exampleNamed(t, s, "self-derived-live")
	clock := func() time.Time { return ex.now }
	sig := strings.TrimPrefix(ex.header.Get("Paymongo-Signature"), "t=1496734173,te=,li=")
	header := func(v string) http.Header { return http.Header{"Paymongo-Signature": {v}} }
	live, err := s.New([]string{ex.secret}, nil, clock)
	require.NoError(t, err)
	test, err := s.New([]string{ex.secret}, map[string]string{"MODE": "test"}, clock)
	require.NoError(t, err)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		p      *Provider
		header string
		want   error
	}{
		{"live checks li", live, "t=1496734173,te=,li=" + sig, nil},
		{"live ignores te", live, "t=1496734173,te=" + sig + ",li=", ErrNoValidSignature},
		{"live ignores a bad te", live, "t=1496734173,te=00,li=" + sig, nil},
		{"test checks te", test, "t=1496734173,te=" + sig + ",li=", nil},
		{"test ignores li", test, "t=1496734173,te=,li=" + sig, ErrNoValidSignature},
		{"items in any order", test, "te=" + sig + ",li=,t=1496734173", nil},
	} {
		err := tc.p.Verify(ctx, providers.Delivery{Header: header(tc.header), Body: ex.body})
		if tc.want == nil {
			require.NoError(t, err, tc.name)
			continue
		}
		require.ErrorIs(t, err, tc.want, tc.name)
	}
	d, err := test.Sign(ex.body)
	require.NoError(t, err)
	require.Regexp(t, `^t=[0-9]+,te=[0-9a-f]{64}$`, d.Header.Get("Paymongo-Signature"))
	_, err = s.New([]string{ex.secret}, map[string]string{"MODE": "sandbox"}, clock)
	require.ErrorContains(t, err, `MODE: "sandbox" is not one of its choices`)
	for _, v := range s.Entry().Settings().(*Settings).Variables() {
		if v.Name == "PAYMONGO_MODE" {
			require.EqualError(t, v.Set("sandbox"), `"sandbox" is not one of live, test`)
		}
	}
}

// TestPhonepeTokenDigest: the Authorization PhonePe sends is the SHA-256 of
// a configured username:password, never the pair itself; its body is not
// signed, so no route condition may read it.
func TestPhonepeTokenDigest(t *testing.T) {
	s := builtinSpec(t, "phonepe")
	p, err := s.New([]string{"other:credential1", "username:password"}, nil, nil)
	require.NoError(t, err)
	ctx := context.Background()
	body := []byte(`{"type":"PG_REFUND_COMPLETED","payload":{"merchantRefundId":"RF-1","state":"COMPLETED"}}`)
	at := func(auth string) error {
		return p.Verify(ctx, providers.Delivery{Header: http.Header{"Authorization": {auth}}, Body: body})
	}
	require.NoError(t, at("bc842c31a9e54efe320d30d948be61291f3ceee4766e36ab25fa65243cd76e0e"))
	require.ErrorIs(t, at("username:password"), ErrNoValidSignature)
	require.ErrorIs(t, at("BC842C31A9E54EFE320D30D948BE61291F3CEEE4766E36AB25FA65243CD76E0E"), ErrNoValidSignature)
	items, err := p.Parse(providers.Delivery{Body: body})
	require.NoError(t, err)
	require.Equal(t, "PG_REFUND_COMPLETED:RF-1:COMPLETED", items[0].Key)
	require.False(t, s.BodySigned())
	require.False(t, builtinSpec(t, "flutterwave").BodySigned())
	for _, name := range []string{"snap", "winpay", "cashfree", "paymongo", "hitpay", "paystack"} {
		require.True(t, builtinSpec(t, name).BodySigned(), name)
	}
}

// TestCashfreeKeys: a payment webhook is keyed by its cf_payment_id; any
// other by its type and a digest of the body, as the contract says.
func TestCashfreeKeys(t *testing.T) {
	s := builtinSpec(t, "cashfree")
	p, err := s.New([]string{"cfsk"}, nil, nil)
	require.NoError(t, err)
	refund := []byte(`{"data":{"refund":{"cf_refund_id":"88001"}},"type":"REFUND_STATUS_WEBHOOK"}`)
	items, err := p.Parse(providers.Delivery{Body: refund})
	require.NoError(t, err)
	require.Equal(t, "REFUND_STATUS_WEBHOOK:"+hex.EncodeToString(sha256Sum(refund)), items[0].Key)
	items, err = p.Parse(providers.Delivery{Body: []byte(`{"data":{"payment":{"cf_payment_id":5114910546213}},"type":"PAYMENT_SUCCESS_WEBHOOK"}`)})
	require.NoError(t, err)
	require.Equal(t, "PAYMENT_SUCCESS_WEBHOOK:5114910546213", items[0].Key)
	require.Equal(t, []string{"data.payment.cf_payment_id", "data.refund.cf_refund_id"}, p.EventIDFields())

	ex := s.examples[0]
	d := providers.Delivery{Header: ex.header.Clone(), Body: ex.body}
	d.Header.Set("X-Webhook-Timestamp", "1617695238078.5")
	require.ErrorIs(t, p.Verify(context.Background(), d), ErrInvalidTimestamp)
}

// TestJoinedFields: Faspay's two published signatures verify (upper-case
// hex as sent, lower-case too); a field the signed text joins with the
// separator may not hold it (400), while an unsigned field may.
func TestJoinedFields(t *testing.T) {
	ctx := context.Background()
	faspay := builtinSpec(t, "faspay")
	ex := exampleNamed(t, faspay, "faspay-response-signature")
	p, err := faspay.New([]string{"other", ex.secret}, nil, nil)
	require.NoError(t, err)
	require.NoError(t, p.Verify(ctx, providers.Delivery{Body: ex.body}))
	lower := bytes.Replace(ex.body, []byte("D8F437D951EC1DABB52127A22F91748B473658DC"), []byte("d8f437d951ec1dabb52127a22f91748b473658dc"), 1)
	require.NoError(t, p.Verify(ctx, providers.Delivery{Body: lower}))
	upper, err := faspay.New([]string{"4E62F498C"}, nil, nil)
	require.NoError(t, err)
	require.ErrorIs(t, upper.Verify(ctx, providers.Delivery{Body: ex.body}), ErrNoValidSignature, "the password is hashed as written")

	signer, err := faspay.New([]string{"pw"}, nil, nil)
	require.NoError(t, err)
	for body, want := range map[string]error{
		"MERCHANTID=M1&MERCHANT_TRANID=O1&AMOUNT=1.00&TXN_STATUS=C&CUST_NAME=a%23b": nil,
		"MERCHANTID=M1&MERCHANT_TRANID=O%231&AMOUNT=1.00&TXN_STATUS=C":              ErrNoEventKey,
		"MERCHANTID=M%231&MERCHANT_TRANID=O1&AMOUNT=1.00&TXN_STATUS=C":              ErrNoEventKey,
		"MERCHANTID=M1&MERCHANT_TRANID=O1&AMOUNT=1.00&TXN_STATUS=C&TXN_STATUS=S":    ErrNotForm,
		"MERCHANTID=M1&MERCHANT_TRANID=O1&AMOUNT=1.00&TXN_STATUS=C&txn_status=S":    ErrNotForm,
		"MERCHANTID=M1&merchant.tranid=O1":                                          ErrNotForm,
	} {
		if errors.Is(want, ErrNotForm) {
			require.ErrorIs(t, signer.Verify(ctx, providers.Delivery{Body: []byte(body)}), providers.ErrMalformed, body)
			continue
		}
		d, err := signer.Sign([]byte(body))
		require.NoError(t, err, body)
		require.Equal(t, FormContentType, d.Header.Get("Content-Type"))
		require.NoError(t, signer.Verify(ctx, d), body)
		_, err = signer.Parse(d)
		if want == nil {
			require.NoError(t, err, body)
			continue
		}
		require.ErrorIs(t, err, want, body)
	}

	payu := builtinSpec(t, "payu")
	pp, err := payu.New([]string{"EXAMPLESALT"}, nil, nil)
	require.NoError(t, err)
	require.NoError(t, pp.Verify(ctx, providers.Delivery{Body: payu.examples[0].body}))
	for body, ok := range map[string]bool{
		"status=success&txnid=T1&amount=1.00&key=K&productinfo=a%7Cb": true,
		"status=success&txnid=T1&amount=1.00&key=K%7CX":               false,
		"status=success&txnid=T%7C1&amount=1.00&key=K":                false,
		"status=suc%7Ccess&txnid=T1&amount=1.00&key=K":                false,
		"status=success&txnid=T1&amount=1%7C00&key=K":                 false,
	} {
		d, err := pp.Sign([]byte(body))
		require.NoError(t, err)
		require.NoError(t, pp.Verify(ctx, d))
		_, err = pp.Parse(d)
		if ok {
			require.NoError(t, err, body)
			continue
		}
		require.ErrorIs(t, err, ErrNoEventKey, body)
	}
}

// TestFormGates: what a form spec and a plain digest are refused for.
func TestFormGates(t *testing.T) {
	base := readSpec(t, "builtin/faspay.yaml")
	for _, tc := range []struct{ name, old, new, want string }{
		{"no secret in a plain digest", "##{{secret}}##", "####", "must hold {{secret}} exactly once"},
		{"secret in an hmac", "algorithm: sha1", "algorithm: hmac-sha1", `secret references are not allowed here`},
		{"field without a form", "body: form\n", "", "signature.field: is for form bodies"},
		{"key field not joined", "fields: [MERCHANTID, MERCHANT_TRANID, AMOUNT, TXN_STATUS]", "fields: [MERCHANTID, AMOUNT, TXN_STATUS]",
			"form.MERCHANT_TRANID is joined to other fields in signature.signed: list it in signature.joined.fields"},
		{"joined field not signed", "fields: [MERCHANTID,", "fields: [CUST_NAME, MERCHANTID,", "form.CUST_NAME is not part of signature.signed"},
		{"key from an unsigned field", `key: "{{form.MERCHANT_TRANID}}:{{form.TXN_STATUS}}"`, `key: "{{form.TRANSACTIONID}}"`, "form.TRANSACTIONID is not part of signature.signed"},
		{"json in a form", `type: "{{form.TXN_STATUS}}"`, `type: "{{json.TXN_STATUS}}"`, "json references are not allowed here"},
		{"form in v1", "version: 2\n", "", "body: needs version: 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, base, tc.old)
			_, err := Load("faspay.yaml", []byte(strings.Replace(base, tc.old, tc.new, 1)))
			require.ErrorContains(t, err, tc.want)
		})
	}
}
