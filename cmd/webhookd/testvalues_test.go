package main

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testValues are the values the tests enable each Go provider with, by
// variable: made-up secrets and settings that no gateway issued for an
// account (Adyen's first key is the one fixtures/adyen are signed with).
// They are the tests' own, so that no setting, table entry or help line of
// the binary holds one. A spec is enabled with its own first example's
// values (providers.Variable.Example).
var testValues = map[string]string{
	"WEBHOOKD_PAYPAL_WEBHOOK_IDS":   "8PT597110X687430LKGECATA",
	"WEBHOOKD_ADYEN_HMAC_KEYS":      "44782def547aaa06c910c43932b1eb0c71fc68d9d0c057550c48ec2acf6ba056,00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
	"WEBHOOKD_MIDTRANS_SERVER_KEY":  "SB-Mid-server-table-test",
	"WEBHOOKD_DUITKU_MERCHANT_CODE": "DS15782",
	"WEBHOOKD_DUITKU_API_KEYS":      "duitku_table_test_api_key",
	"WEBHOOKD_2C2P_SECRET_KEYS":     "table_test_2c2p_secret_key",
	// A second whsec_ secret must be base64 too: the suite's own
	// suffix would not decode.
	"WEBHOOKD_STANDARD_SECRETS": "whsec_dGFibGUtdGVzdC1zdGFuZGFyZC1zZWNyZXQ=,whsec_dGFibGUtdGVzdC1zdGFuZGFyZC1yb3RhdGVk",
	"WEBHOOKD_DOKU_CLIENT_ID":   "MCH-0001-table-test",
	"WEBHOOKD_DOKU_SECRET_KEYS": "SK-table-test-secret",
	"WEBHOOKD_BRAINTREE_KEYS":   "table_test_public_key:table_test_private_key,table_test_public_key_2:table_test_private_key_2",
}

// testValue is the value the tests set v to when they enable its
// provider; "" for a variable that does not enable it.
func testValue(v envVar) string {
	if value, ok := testValues[v.key]; ok {
		return value
	}
	return v.example
}

// TestNoTestValuesInTheBinary: no Go provider's variable carries a value
// of its own that could enable it (the tests' values are testValues), and
// neither help nor an unconfigured serve's warning shows one: only the
// operator's own secrets enable a provider.
func TestNoTestValuesInTheBinary(t *testing.T) {
	for _, e := range providerTable() {
		if st := reflect.TypeOf(e.Settings()).Elem(); st.Kind() == reflect.Struct {
			for f := range st.Fields() {
				_, tagged := f.Tag.Lookup("example")
				require.False(t, tagged, "%s: %s carries a value in its tag", e.Name, f.Name)
			}
		}
		for _, v := range envVars(e.Settings()) {
			if !v.field.IsValid() {
				continue // a spec's: its own published example
			}
			require.Empty(t, v.example, "%s: %s holds a value of its own", e.Name, v.key)
			if _, ok := testValues[v.key]; ok {
				require.Empty(t, v.def, "%s: an enabling variable has no default", v.key)
			}
		}
	}
	var help bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"help"}, &help, io.Discard))
	cfg, err := loadConfigFrom([]string{"WEBHOOKD_DOWNSTREAM_URL=http://127.0.0.1:9/"})
	require.NoError(t, err)
	for key, value := range testValues {
		for _, item := range strings.Split(value, ",") {
			require.NotContains(t, help.String(), item, "help shows the test value of %s", key)
		}
	}
	reg, err := buildRegistry(cfg)
	require.NoError(t, err)
	require.Empty(t, reg.Names(), "no provider is enabled without its variables")
	require.Contains(t, noProviderWarning(cfg), "no provider is configured")
}
