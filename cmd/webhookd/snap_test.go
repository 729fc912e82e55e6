package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Winpay's published SNAP callback (docs/providers/winpay.md): its
// sandbox public key, headers and body exactly as signed.
const (
	winpaySandboxKey = `-----BEGIN PUBLIC KEY-----
MIGeMA0GCSqGSIb3DQEBAQUAA4GMADCBiAKBgHGK10J1oBbCD75Wy8P5rL8zzCz9
lpHZ7OIHVaO4vlX0tjpKD887ldaTLl4Vdhc6I88OHscV/ijQ7OQ07IpWLAoSm7VK
puiUDt9xUx9dCHAIrH6DDNOI95z2b6jxwh81ZTC+LCDsEb5b797dmxa7Kv8kABjo
Nt8JR33E9p3d7uzrAgMBAAE=
-----END PUBLIC KEY-----
`
	winpayCallback          = `{"partnerServiceId":"    9042","customerNo":"00000009","virtualAccountNo":"    904200000009","virtualAccountName":"WINPAY - fiandi","trxId":"INV-000000023220","paymentRequestId":"45539","paidAmount":{"value":"10000.00","currency":"IDR"},"trxDateTime":"2024-01-11T08:57:55+07:00","additionalInfo":{"contractId":"si1cd5671d-2ffe-4cca-aff0-b8ee9bc1c041","channel":"BSI"}}`
	winpayCallbackSignature = "Zng8tJgtK2lPd8CP89KyO1OGEKXn1tFfXevTGIn5IhHYDpobp7+4uvuczP5HwldghO5mzkh03v6wnggoZev8M2RyKegbrRaIr66KbAgr6sfKfH9MfkXFcEKpF/am8QMr4oExKPdYTdGEr6pq6m1CzUjFQsyu9z6JuMGrjXrxFXU="
)

// TestWinpayCheckedAndServed: `providers check` verifies Winpay's
// published callback (the built-in spec's example); serve refuses its
// 1023-bit sandbox key until WEBHOOKD_WINPAY_ALLOW_WEAK_KEYS allows it,
// then warns, and answers the callback posted to the listener path with
// the service path Winpay appends: the SNAP acknowledgement, the core
// called once, a retry replayed.
func TestWinpayCheckedAndServed(t *testing.T) {
	var out, errb bytes.Buffer
	builtin := filepath.Join("..", "..", "providers", "spec", "builtin", "winpay.yaml")
	require.Zero(t, run(context.Background(), []string{"providers", "check", builtin}, &out, &errb), out.String())
	require.Equal(t, "ok   "+builtin+": winpay, /webhooks/winpay, 2 example(s) verified (built in)\n", out.String())

	keyFile := filepath.Join(t.TempDir(), "winpay-sandbox.pem")
	require.NoError(t, os.WriteFile(keyFile, []byte(winpaySandboxKey), 0o600))
	core := newCore(t)
	env := map[string]string{
		"WEBHOOKD_DATA_DIR":                 t.TempDir(),
		"WEBHOOKD_DOWNSTREAM_URL":           core.URL,
		"WEBHOOKD_WINPAY_PUBLIC_KEYS":       keyFile,
		"WEBHOOKD_WINPAY_NOTIFICATION_PATH": "/sandbox_prod/url_listener.php",
		"WEBHOOKD_RETENTION":                "100000h", // the callback is from January 2024
	}
	_, stderr, code := execWebhookd(t, env, "serve")
	require.NotZero(t, code)
	require.Contains(t, stderr, "WEBHOOKD_WINPAY_PUBLIC_KEYS: RSA key shorter than 2048 bits (1023 bits; WEBHOOKD_WINPAY_ALLOW_WEAK_KEYS=true accepts it)")

	env["WEBHOOKD_WINPAY_ALLOW_WEAK_KEYS"] = "true"
	srv := startServe(t, env)
	require.Contains(t, srv.logs(), "WEBHOOKD_WINPAY_PUBLIC_KEYS: a 1023-bit RSA key is accepted")
	post := func(path string) (int, http.Header, string) {
		req, err := http.NewRequest(http.MethodPost, srv.url+path, strings.NewReader(winpayCallback))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Timestamp", "2024-01-11T08:57:55+07:00")
		req.Header.Set("X-Partner-Id", "170041")
		req.Header.Set("X-Signature", winpayCallbackSignature)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, string(body)
	}
	const ack = `{"responseCode":"2002500","responseMessage":"Successful"}`
	status, header, body := post("/webhooks/winpay/v1.0/transfer-va/payment")
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, ack, body)
	require.Equal(t, "application/json", header.Get("Content-Type"))
	status, header, body = post("/webhooks/winpay/v1.0/transfer-va/payment")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, ack, body)
	require.Equal(t, "true", header.Get("Idempotent-Replayed"))
	const key = "winpay:45539:INV-000000023220"
	require.Equal(t, 1, core.count(key))
	require.Equal(t, "va.payment", core.get(key, 0).header.Get("Webhook-Event-Type"))
	require.Equal(t, winpayCallback, string(core.get(key, 0).body))

	status, _, _ = post("/webhooks/winpay")
	require.Equal(t, http.StatusUnauthorized, status, "signed with the service path")
}

// TestRSAMinimumKept: the binary keeps Go's refusal of RSA keys under 1024
// bits for everything but a spec's key its ALLOW_WEAK_KEYS allows
// (TestWinpayCheckedAndServed): crypto/rsa, in this process, still refuses
// Winpay's 1023-bit sandbox key, as it would a TLS peer's.
func TestRSAMinimumKept(t *testing.T) {
	b, _ := pem.Decode([]byte(winpaySandboxKey))
	require.NotNil(t, b)
	pub, err := x509.ParsePKIXPublicKey(b.Bytes)
	require.NoError(t, err)
	sig, err := base64.StdEncoding.DecodeString(winpayCallbackSignature)
	require.NoError(t, err)
	digest := sha256.Sum256([]byte(winpayCallback))
	require.ErrorContains(t, rsa.VerifyPKCS1v15(pub.(*rsa.PublicKey), crypto.SHA256, digest[:], sig), "insecure")
}

// TestWinpayCheckNeedsTheAllowance: `providers check` verifies Winpay's
// published callback under its 1023-bit key only where the example's
// settings allow weak keys; a copy of the spec without the allowance is
// refused, naming the size and the setting that accepts it.
func TestWinpayCheckNeedsTheAllowance(t *testing.T) {
	builtin, err := os.ReadFile(filepath.Join("..", "..", "providers", "spec", "builtin", "winpay.yaml"))
	require.NoError(t, err)
	copied := strings.Replace(string(builtin), "\nname: winpay\n", "\nname: winpaycopy\n", 1)
	require.NotEqual(t, string(builtin), copied)
	for _, tc := range []struct {
		name, spec string
		code       int
		want       string
	}{
		{"allowed", copied, 0, "ok   %s: winpaycopy, /webhooks/winpaycopy, 2 example(s) verified\n"},
		{"not allowed", strings.Replace(copied, "      ALLOW_WEAK_KEYS: \"true\"\n", "", 1), 1,
			"FAIL %s: example winpay-published-callback: winpaycopy: PUBLIC_KEYS: RSA key shorter than 2048 bits (1023 bits; WINPAYCOPY_ALLOW_WEAK_KEYS=true accepts it)\n"},
	} {
		file := filepath.Join(t.TempDir(), "winpaycopy.yaml")
		require.NoError(t, os.WriteFile(file, []byte(tc.spec), 0o600))
		var out bytes.Buffer
		require.Equal(t, tc.code, run(context.Background(), []string{"providers", "check", file}, &out, io.Discard), tc.name)
		require.Equal(t, fmt.Sprintf(tc.want, file), out.String(), tc.name)
	}
}
