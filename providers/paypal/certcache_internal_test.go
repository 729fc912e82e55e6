package paypal

import (
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFlightLooksAgain: a flight that starts after another flight of its
// URL ended (between its caller's look at the cache and its DoChan) does
// not fetch again: a failure pauses the URL, a certificate is answered
// from the cache. Under load, 20 deliveries at once cost two fetches
// without it.
func TestFlightLooksAgain(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	leaf := &x509.Certificate{}
	for _, tc := range []struct {
		name  string
		ended func(c *certCache, key string)
		want  error
	}{
		{"the other flight failed", func(c *certCache, key string) { c.failed[key] = now }, ErrCertUnavailable},
		{"the other flight cached it", func(c *certCache, key string) { c.addLocked(key, leaf) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCertCache(0)
			const key = "https://api.paypal.com/v1/notifications/certs/CERT-1"
			tc.ended(c, key)
			fetches := 0
			got, err := c.fetchOnce(key, clock, func() (*x509.Certificate, error) {
				fetches++
				return nil, errors.New("fetched")
			})
			require.Zero(t, fetches)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.Same(t, leaf, got)
		})
	}
}
