package duitku_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/duitku"
	"github.com/webhookd/webhookd/providers/providertest"
)

const (
	fixtures        = "../../fixtures/duitku"
	fixtureMerchant = "DS15782" // the merchantCode of fixtures/duitku
	fixtureKey      = "duitku_table_test_api_key"

	// The callback test of Duitku's PHP library (duitkupg/duitku-php,
	// tests/CallbackApiTest.php with tests/params/ParamsCallback.json):
	// config ("732B39FC61796845775D2C4FB05332AF", "D0001").
	vecKey      = "732B39FC61796845775D2C4FB05332AF"
	vecMerchant = "D0001"
	vecSig      = "4104f20a70c933113c66c004fe25a9f1"
	vecBody     = "merchantOrderId=12345&resultCode=00&merchantCode=D0001&amount=10000&productDetail=&paymentCode=&reference=D00015HL5BJKRM27MCUS&additionalParam=&signature=" + vecSig
)

func newAdapter(t testing.TB, merchant string, keys ...string) *duitku.Adapter {
	t.Helper()
	a, err := duitku.New(merchant, keys)
	require.NoError(t, err)
	return a
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	require.NoError(t, err)
	return b
}

func fixtureNames(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for i, p := range paths {
		paths[i] = filepath.Base(p)
	}
	return paths
}

// TestSDKVector reproduces the signature of Duitku's own library test.
func TestSDKVector(t *testing.T) {
	require.Equal(t, vecSig, duitku.Signature(vecMerchant, "10000", "12345", vecKey))
	a := newAdapter(t, vecMerchant, "an_older_key", vecKey)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: []byte(vecBody)}), "any configured key")
	ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(vecBody)}))
	require.NoError(t, err)
	require.Equal(t, "12345:D00015HL5BJKRM27MCUS:00", ev.Key)
	require.Equal(t, "00", ev.Type)

	// Sign reproduces the very body: the signature rewritten in place.
	sd, err := newAdapter(t, vecMerchant, vecKey).Sign([]byte(strings.Replace(vecBody, vecSig, "0", 1)))
	signed, h := sd.Body, sd.Header
	require.NoError(t, err)
	require.Equal(t, vecBody, string(signed))
	require.Equal(t, duitku.ContentType, h.Get("Content-Type"))
}

func TestVerifyRefuses(t *testing.T) {
	a := newAdapter(t, vecMerchant, vecKey)
	replace := func(old, new string) []byte { return []byte(strings.Replace(vecBody, old, new, 1)) }
	tests := []struct {
		name string
		body []byte
		want error
	}{
		{"amount changed", replace("amount=10000", "amount=10001"), duitku.ErrNoValidSignature},
		{"amount reformatted", replace("amount=10000", "amount=10000.00"), duitku.ErrNoValidSignature},
		{"order id changed", replace("merchantOrderId=12345", "merchantOrderId=12346"), duitku.ErrNoValidSignature},
		{"another merchant, not signed again", replace("merchantCode=D0001", "merchantCode=D0002"), duitku.ErrNoValidSignature},
		// Checked once the signature holds: a genuine callback of another
		// project under our key is refused for its account (its key is
		// then logged), a forged one for its signature.
		{"another merchant, signed", []byte(strings.Replace(strings.Replace(vecBody, "merchantCode=D0001", "merchantCode=D0002", 1),
			vecSig, duitku.Signature("D0002", "10000", "12345", vecKey), 1)), duitku.ErrForeignMerchant},
		{"signature in upper case", replace(vecSig, strings.ToUpper(vecSig)), duitku.ErrInvalidSignature},
		{"signature cut", replace(vecSig, vecSig[:31]), duitku.ErrInvalidSignature},
		{"signature wrong", replace(vecSig, "0"+vecSig[1:]), duitku.ErrNoValidSignature},
		{"no signature", replace("&signature="+vecSig, ""), duitku.ErrNotSigned},
		{"empty signature", replace("signature="+vecSig, "signature="), duitku.ErrNotSigned},
		{"no amount", replace("&amount=10000", ""), duitku.ErrSignedFieldMissing},
		{"empty merchant code", replace("merchantCode=D0001", "merchantCode="), duitku.ErrSignedFieldMissing},
		{"amount given twice", []byte(vecBody + "&amount=99999"), duitku.ErrRepeatedField},
		{"signature given twice", []byte(vecBody + "&signature=" + vecSig), duitku.ErrRepeatedField},
		{"field given twice, escaped", []byte(vecBody + "&%61mount=10000"), duitku.ErrRepeatedField},
		{"field given twice, other case", []byte(vecBody + "&MerchantOrderId=VICTIM&ResultCode=00"), duitku.ErrRepeatedField},
		{"field given twice, all caps", []byte(vecBody + "&AMOUNT=1"), duitku.ErrRepeatedField},
		{"PHP array name", []byte(vecBody + "&amount[]=1"), duitku.ErrNotForm},
		{"PHP dotted name", []byte(vecBody + "&merchant.Code=1"), duitku.ErrNotForm},
		{"empty pair", []byte(vecBody + "&&x=1"), duitku.ErrNotForm},
		{"bad escape", []byte(vecBody + "&x=%zz"), duitku.ErrNotForm},
		{"JSON", []byte(`{"merchantCode":"D0001"}`), duitku.ErrNotForm},
		{"empty", nil, duitku.ErrNotForm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.Verify(context.Background(), providers.Delivery{Header: http.Header{}, Body: tt.body})
			require.ErrorIs(t, err, tt.want)
			require.NotContains(t, err.Error(), vecKey)
			require.NotContains(t, err.Error(), vecSig)
		})
	}
	t.Run("form errors are 400, the rest 401", func(t *testing.T) {
		require.ErrorIs(t, duitku.ErrRepeatedField, providers.ErrMalformed)
		require.ErrorIs(t, duitku.ErrNotForm, providers.ErrMalformed)
		for _, err := range []error{duitku.ErrNotSigned, duitku.ErrInvalidSignature, duitku.ErrSignedFieldMissing, duitku.ErrForeignMerchant, duitku.ErrNoValidSignature} {
			require.ErrorIs(t, err, providers.ErrUnauthorized)
		}
	})
	t.Run("zero adapter rejects", func(t *testing.T) {
		require.ErrorIs(t, (&duitku.Adapter{}).Verify(context.Background(), providers.Delivery{Body: []byte(vecBody)}), providers.ErrUnauthorized)
	})
}

func TestNew(t *testing.T) {
	for _, tt := range []struct {
		merchant string
		keys     []string
	}{
		{"", []string{"api_key_one"}},
		{" D0001", []string{"api_key_one"}},
		{"D0001", nil},
		{"D0001", []string{""}},
		{"D0001", []string{"api_key_one "}},
	} {
		_, err := duitku.New(tt.merchant, tt.keys)
		require.Error(t, err, "%q %q", tt.merchant, tt.keys)
		for _, k := range tt.keys {
			if strings.TrimSpace(k) != "" {
				require.NotContains(t, err.Error(), k)
			}
		}
	}
}
