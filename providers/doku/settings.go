package doku

import (
	"fmt"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// Settings are DOKU's variables in webhookd (the command adds its WEBHOOKD_
// prefix to each name).
type Settings struct {
	ClientID         string        `envconfig:"DOKU_CLIENT_ID" desc:"DOKU Client-Id (from the Back Office); with DOKU_SECRET_KEYS, enables /webhooks/doku"`
	SecretKeys       []string      `envconfig:"DOKU_SECRET_KEYS" desc:"comma-separated DOKU secret keys (SK-...)"`
	NotificationPath string        `envconfig:"DOKU_NOTIFICATION_PATH" default:"/webhooks/doku" desc:"the path of the notification URL as registered in the DOKU Back Office, signed as Request-Target (differs from the local path behind a rewriting proxy)"`
	Tolerance        time.Duration `envconfig:"DOKU_TOLERANCE" default:"24h" desc:"how far a DOKU Request-Timestamp may be from now (older, or ahead of the clock); keep it under WEBHOOKD_RETENTION"`
}

// Entry is DOKU's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "DOKU_SECRET_KEYS",
		SecretNoun: "secret key",
		SignedBody: true, SignedType: true,
	}
}

// Check refuses a client id without secret keys or the reverse, a client id
// with surrounding white space, a notification path that cannot be a
// Request-Target, and a tolerance that is not positive (even while DOKU is
// off, so that enabling it later cannot start without the replay check).
// No secret key is ever quoted.
func (s *Settings) Check(env providers.Env) error {
	switch {
	case s.ClientID != "" && len(s.SecretKeys) == 0:
		return fmt.Errorf("%s: required with %s", env.Var("DOKU_SECRET_KEYS"), env.Var("DOKU_CLIENT_ID"))
	case s.ClientID == "" && len(s.SecretKeys) > 0:
		return fmt.Errorf("%s: required with %s: Verify checks the Client-Id DOKU sends", env.Var("DOKU_CLIENT_ID"), env.Var("DOKU_SECRET_KEYS"))
	case s.ClientID != "" && strings.TrimSpace(s.ClientID) != s.ClientID:
		return fmt.Errorf("%s: has leading or trailing white space", env.Var("DOKU_CLIENT_ID"))
	case CheckNotificationPath(s.NotificationPath) != nil:
		return fmt.Errorf("%s: %q must be the path of the notification URL registered in the DOKU Back Office: starting with /, printable ASCII without spaces",
			env.Var("DOKU_NOTIFICATION_PATH"), s.NotificationPath)
	}
	return env.CheckTolerance("DOKU_TOLERANCE", s.Tolerance, s.ClientID != "")
}

// Build returns the adapter when the client id and at least one secret key
// are set.
func (s *Settings) Build() (providers.Provider, error) {
	if s.ClientID == "" && len(s.SecretKeys) == 0 {
		return nil, nil
	}
	return New(s.ClientID, s.SecretKeys, WithNotificationPath(s.NotificationPath), WithTolerance(s.Tolerance))
}
