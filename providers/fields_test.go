package providers_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

func TestBodyFieldsLookup(t *testing.T) {
	body := []byte(`{"data":{"object":{"currency":"eur","amount":777,"paid":true,"n":null,"list":[1]}},"type":"invoice.paid","esc":"\u0065ur"}`)
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"type", "invoice.paid", true},
		{"data.object.currency", "eur", true},
		{"data.object.amount", "777", true},
		{"data.object.paid", "true", true},
		{"esc", "eur", true},
		{"data.object.n", "", false},
		{"data.object.list", "", false},
		{"data.object", "", false},
		{"data.missing.currency", "", false},
		{"type.inner", "", false},
	} {
		got, ok := providers.NewBodyFields(body).Lookup(tc.path)
		require.Equal(t, []any{tc.want, tc.ok}, []any{got, ok}, tc.path)
	}
	for _, bad := range []string{`{"type":"a","type":"b"}`, `not json`, `[1]`, `{"Type":"a","type":"b"}`} {
		_, ok := providers.NewBodyFields([]byte(bad)).Lookup("type")
		require.False(t, ok, "%s: a body read two ways reads nothing", bad)
	}
}
