package doku_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/doku"
)

var env = providers.Env{Var: func(name string) string { return "WEBHOOKD_" + name }}

func TestSettingsCheck(t *testing.T) {
	ok := func() doku.Settings {
		return doku.Settings{ClientID: vecClientID, SecretKeys: []string{vecSecret},
			NotificationPath: doku.DefaultNotificationPath, Tolerance: doku.DefaultTolerance}
	}
	tests := []struct {
		name    string
		edit    func(*doku.Settings)
		wantVar string // "" means no error
	}{
		{"complete", func(*doku.Settings) {}, ""},
		{"off", func(s *doku.Settings) { s.ClientID, s.SecretKeys = "", nil }, ""},
		{"registered path behind a proxy", func(s *doku.Settings) { s.NotificationPath = "/payments/doku/notify" }, ""},
		{"client id without keys", func(s *doku.Settings) { s.SecretKeys = nil }, "WEBHOOKD_DOKU_SECRET_KEYS"},
		{"keys without client id", func(s *doku.Settings) { s.ClientID = "" }, "WEBHOOKD_DOKU_CLIENT_ID"},
		{"client id with a space", func(s *doku.Settings) { s.ClientID += " " }, "WEBHOOKD_DOKU_CLIENT_ID"},
		{"path without a leading slash", func(s *doku.Settings) { s.NotificationPath = "webhooks/doku" }, "WEBHOOKD_DOKU_NOTIFICATION_PATH"},
		{"full URL as the path", func(s *doku.Settings) { s.NotificationPath = "https://shop.example/notify" }, "WEBHOOKD_DOKU_NOTIFICATION_PATH"},
		{"zero tolerance, even while off", func(s *doku.Settings) { s.ClientID, s.SecretKeys, s.Tolerance = "", nil, 0 }, "WEBHOOKD_DOKU_TOLERANCE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok()
			tt.edit(&s)
			err := s.Check(env)
			if tt.wantVar == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Regexp(t, "^"+tt.wantVar+":", err.Error())
			require.NotContains(t, err.Error(), vecSecret)
		})
	}
}

// TestSettingsBuildSignsForTheNotificationPath: the adapter Build returns
// (what serve verifies with and replay signs with) uses the configured
// notification path.
func TestSettingsBuildSignsForTheNotificationPath(t *testing.T) {
	s := doku.Settings{ClientID: vecClientID, SecretKeys: []string{vecSecret, "SK-NEW-NOT-REAL"},
		NotificationPath: "/payments/doku/notify", Tolerance: time.Hour}
	p, err := s.Build()
	require.NoError(t, err)
	body := []byte(vecBody)
	signed, err := providers.Sign(p, body)
	h := signed.Header
	require.NoError(t, err)
	require.NoError(t, p.Verify(context.Background(), providers.Delivery{Header: h, Body: body}))
	require.Equal(t, doku.SignatureHeader(vecSecret, vecClientID, h.Get(doku.HeaderRequestID), h.Get(doku.HeaderTimestamp), "/payments/doku/notify", body),
		h.Get(doku.HeaderSignature))

	off, err := (&doku.Settings{NotificationPath: doku.DefaultNotificationPath, Tolerance: time.Hour}).Build()
	require.NoError(t, err)
	require.Nil(t, off)
}
