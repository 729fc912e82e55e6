package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTolerancesBelowRetention holds every provider with a tolerance, Go
// adapter or spec, to the contract's rule: a signed timestamp older than
// WEBHOOKD_RETENTION is 401, so while the provider is enabled no value of
// its tolerance may reach the retention, 0 (a default, or "no check")
// included. Each refusal names the tolerance variable.
func TestTolerancesBelowRetention(t *testing.T) {
	checked := 0
	for _, e := range providerTable() {
		vars := envVars(e.Settings())
		var tolerance string
		environ := []string{"WEBHOOKD_DOWNSTREAM_URL=http://127.0.0.1:9/", "WEBHOOKD_RETENTION=1h"}
		for _, v := range vars {
			if strings.HasSuffix(v.key, "_TOLERANCE") {
				tolerance = v.key
			}
			if v.example != "" {
				environ = append(environ, v.key+"="+v.example)
			}
		}
		if tolerance == "" {
			continue
		}
		checked++
		t.Run(e.Name, func(t *testing.T) {
			_, err := loadConfigFrom(append(environ, tolerance+"=30m"))
			require.NoError(t, err, "enabled, with a tolerance below the retention")
			for _, value := range []string{"0s", "1h", "2h"} {
				_, err := loadConfigFrom(append(environ, tolerance+"="+value))
				require.Error(t, err, "%s=%s with WEBHOOKD_RETENTION=1h", tolerance, value)
				require.True(t, strings.HasPrefix(err.Error(), tolerance+": "), err.Error())
			}
		})
	}
	require.GreaterOrEqual(t, checked, 6, "stripe, paddle, standard, doku, paypal, airwallex")
}
