package razorpay_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/razorpay"
)

// Razorpay's SDK vector (razorpay/razorpay-go
// resources/verify_payment_test.go, TestVerifyWebhookSignature;
// docs/providers.md).
const (
	vecSecret    = "123456"
	vecSignature = "ea962f3a2a8090aa14ef10fc178306edcb46ee7ccadae8afe2275cda26f3d2a6"
	vecBody      = `{"entity":"event","account_id":"acc_HVFD0PFnHPAzKj","event":"payment.authorized","contains":["payment"],"payload":{"payment":{"entity":{"id":"pay_JUEM4c0pSLpFEW","entity":"payment","amount":12300,"currency":"INR","status":"authorized","order_id":"order_JUELuT6cFaHkvd","invoice_id":null,"international":false,"method":"netbanking","amount_refunded":0,"refund_status":null,"captured":false,"description":"#JUELZ1z1EC0pwi","card_id":null,"bank":"SBIN","wallet":null,"vpa":null,"email":"prathmesh.bijjargi@razorpay.com","contact":"+917411714931","notes":[],"fee":null,"tax":null,"error_code":null,"error_description":null,"error_source":null,"error_step":null,"error_reason":null,"acquirer_data":{"bank_transaction_id":"6416615"},"created_at":1652339804}}},"created_at":1652339806}`
)

// Our own secrets for the kit and the fixtures.
const (
	secretA  = "rzp_conformance_webhook_secret_a"
	secretB  = "rzp_conformance_webhook_secret_b"
	fixtures = "../../fixtures/razorpay"
)

func newAdapter(t testing.TB, secrets ...string) *razorpay.Adapter {
	t.Helper()
	if len(secrets) == 0 {
		secrets = []string{vecSecret}
	}
	a, err := razorpay.New(secrets)
	require.NoError(t, err)
	return a
}

func sig(v ...string) http.Header { return http.Header{razorpay.HeaderName: v} }

func TestVerifyReproducesTheSDKVector(t *testing.T) {
	require.Equal(t, vecSignature, razorpay.SignatureHeader(vecSecret, []byte(vecBody)))
	a := newAdapter(t)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: sig(vecSignature), Body: []byte(vecBody)}))
	signed, err := a.Sign([]byte(vecBody))
	body, h := signed.Body, signed.Header
	require.NoError(t, err)
	require.Equal(t, []byte(vecBody), body)
	require.Equal(t, sig(vecSignature), h)
	ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(vecBody)}))
	require.NoError(t, err)
	require.Equal(t, "payment.authorized:pay_JUEM4c0pSLpFEW:1652339806", ev.Key)
	require.Equal(t, "payment.authorized", ev.Type)
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		header  http.Header
		body    string
		want    error
	}{
		{"vector", nil, sig(vecSignature), vecBody, nil},
		{"upper-case hex is the same bytes", nil, sig(strings.ToUpper(vecSignature)), vecBody, nil},
		{"rotation: old secret second", []string{"new-secret", vecSecret}, sig(vecSignature), vecBody, nil},
		{"rotation: old secret first", []string{vecSecret, "new-secret"}, sig(vecSignature), vecBody, nil},
		{"a header-only change is still the same signed body", nil, http.Header{razorpay.HeaderName: {vecSignature}, razorpay.EventIDHeader: {"Fresh123"}}, vecBody, nil},

		{"wrong secret", []string{"1234567"}, sig(vecSignature), vecBody, razorpay.ErrNoValidSignature},
		{"amount edited", nil, sig(vecSignature), strings.Replace(vecBody, `"amount":12300`, `"amount":1230`, 1), razorpay.ErrNoValidSignature},
		{"event edited", nil, sig(vecSignature), strings.Replace(vecBody, `payment.authorized`, `payment.captured`, 1), razorpay.ErrNoValidSignature},
		{"re-serialised", nil, sig(vecSignature), strings.Replace(vecBody, `,"`, `, "`, 1), razorpay.ErrNoValidSignature},
		{"trailing new line", nil, sig(vecSignature), vecBody + "\n", razorpay.ErrNoValidSignature},
		{"signature of an empty body", nil, sig(razorpay.SignatureHeader(vecSecret, nil)), vecBody, razorpay.ErrNoValidSignature},
		{"last hex digit changed", nil, sig(vecSignature[:63] + "7"), vecBody, razorpay.ErrNoValidSignature},

		{"no header", nil, nil, vecBody, razorpay.ErrNotSigned},
		{"empty header", nil, sig(""), vecBody, razorpay.ErrNotSigned},
		{"sent twice", nil, sig(vecSignature, vecSignature), vecBody, razorpay.ErrInvalidHeader},
		{"not hex", nil, sig(strings.Repeat("z", 64)), vecBody, razorpay.ErrInvalidHeader},
		{"truncated", nil, sig(vecSignature[:62]), vecBody, razorpay.ErrInvalidHeader},
		{"with a prefix", nil, sig("sha256=" + vecSignature), vecBody, razorpay.ErrInvalidHeader},
		{"with a space", nil, sig(" " + vecSignature[1:]), vecBody, razorpay.ErrInvalidHeader},
		{"base64 instead of hex", nil, sig("6pYvOiqAkKoU7xD8F4MG7ctG7nzK2uiv4idc2ibz0qY="), vecBody, razorpay.ErrInvalidHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := newAdapter(t, tt.secrets...).Verify(context.Background(), providers.Delivery{Header: tt.header, Body: []byte(tt.body)})
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
			for _, s := range append([]string{vecSecret, vecSignature[:16], "acc_HVFD0PFnHPAzKj"}, tt.secrets...) {
				require.NotContains(t, err.Error(), s)
			}
		})
	}
}

func TestVerifyRejectsEveryOneByteChange(t *testing.T) {
	a := newAdapter(t)
	for i := range len(vecBody) {
		b := []byte(vecBody)
		b[i] ^= 0x01
		require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: sig(vecSignature), Body: b}), providers.ErrUnauthorized, "body byte %d", i)
	}
	for i := range len(vecSignature) {
		s := []byte(vecSignature)
		s[i] ^= 0x01
		require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: sig(string(s)), Body: []byte(vecBody)}), providers.ErrUnauthorized, "signature byte %d", i)
	}
}

func TestZeroAdapterRejects(t *testing.T) {
	var a razorpay.Adapter
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: sig(vecSignature), Body: []byte(vecBody)}), providers.ErrUnauthorized)
	_, err := a.Sign([]byte(vecBody))
	require.Error(t, err)
}

func TestNew(t *testing.T) {
	for name, secrets := range map[string][]string{
		"none":           nil,
		"empty":          {""},
		"leading space":  {" " + secretA},
		"trailing space": {secretA, secretB + " "},
	} {
		_, err := razorpay.New(secrets)
		require.Error(t, err, name)
		require.NotContains(t, err.Error(), "conformance", name)
	}
	_, err := razorpay.New([]string{secretA, secretB})
	require.NoError(t, err)
}

// TestTooOld: with WithMaxAge (WEBHOOKD_RAZORPAY_MAX_AGE, below the
// retention), created_at is signed, so an event older than the max age is a
// capture replayed after its record was pruned, not a retry (Razorpay
// retries for 24 hours): refused, 401.
func TestTooOld(t *testing.T) {
	const maxAge = 167 * time.Hour
	created := time.Unix(1652339806, 0) // vecBody's created_at
	header := sig(vecSignature)
	tests := []struct {
		name    string
		now     time.Time
		wantErr error
	}{
		{"just created", created, nil},
		{"created ahead of our clock", created.Add(-time.Minute), nil},
		{"a day of retries", created.Add(24 * time.Hour), nil},
		{"at the limit", created.Add(maxAge), nil},
		{"a second past it", created.Add(maxAge + time.Second), razorpay.ErrTooOld},
		{"a year later", created.AddDate(1, 0, 0), razorpay.ErrTooOld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := razorpay.New([]string{vecSecret}, razorpay.WithMaxAge(maxAge, func() time.Time { return tt.now }))
			require.NoError(t, err)
			err = a.Verify(context.Background(), providers.Delivery{Header: header, Body: []byte(vecBody)})
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
		})
	}
	// A bad signature is still named as such, whatever the age.
	a, err := razorpay.New([]string{"other"}, razorpay.WithMaxAge(maxAge, func() time.Time { return created.AddDate(1, 0, 0) }))
	require.NoError(t, err)
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: header, Body: []byte(vecBody)}), razorpay.ErrNoValidSignature)
	// `webhookd replay` re-dates a fixture older than the max age, and
	// only then: by whole half max ages, so that a replay a little later
	// keeps the fixture's key (sent twice, it is replayed the second time).
	now := created.AddDate(1, 0, 0)
	redated := func(now time.Time) (providers.Delivery, providers.Event) {
		a, err := razorpay.New([]string{vecSecret}, razorpay.WithMaxAge(maxAge, func() time.Time { return now }))
		require.NoError(t, err)
		signed, err := a.Sign([]byte(vecBody))
		require.NoError(t, err)
		require.NoError(t, a.Verify(context.Background(), signed))
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: signed.Body}))
		require.NoError(t, err)
		return signed, ev
	}
	_, ev := redated(now)
	step := int64(maxAge / time.Second / 2)
	at := created.Unix() + (now.Unix()-created.Unix())/step*step
	require.Equal(t, "payment.authorized:pay_JUEM4c0pSLpFEW:"+strconv.FormatInt(at, 10), ev.Key)
	require.Greater(t, at, now.Unix()-step)
	_, later := redated(now.Add(time.Minute))
	require.Equal(t, ev.Key, later.Key, "a replay a minute later keeps the key")
	a, err = razorpay.New([]string{vecSecret}, razorpay.WithMaxAge(maxAge, func() time.Time { return now }))
	require.NoError(t, err)
	fresh := strings.Replace(vecBody, `"created_at":1652339806}`, `"created_at":`+strconv.FormatInt(now.Unix()-60, 10)+`}`, 1)
	signed, err := a.Sign([]byte(fresh))
	body := signed.Body
	require.NoError(t, err)
	require.Equal(t, fresh, string(body))
	// Without the option, any age (the conformance kit's fixtures).
	require.NoError(t, newAdapter(t).Verify(context.Background(), providers.Delivery{Header: header, Body: []byte(vecBody)}))
	_, err = razorpay.New([]string{vecSecret}, razorpay.WithMaxAge(0, time.Now))
	require.Error(t, err)
}

// TestVerifyAllocations bounds what verifying a delivery allocates, with
// the signing secret second of two: the hex-decoded signature (1). Building
// an HMAC per secret cost six objects more per secret (13 in all) on every
// delivery; the adapter keeps one signature.HMACKey per secret.
func TestVerifyAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop entries at random")
	}
	a := newAdapter(t, secretA, vecSecret)
	h, body := sig(vecSignature), []byte(vecBody)
	allocs := testing.AllocsPerRun(100, func() {
		if err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations", allocs)
	require.LessOrEqual(t, allocs, 1.0)
}
