package main

import (
	"fmt"
	"net"
	"strings"

	"github.com/webhookd/webhookd/providers/midtrans"
)

// checkMidtrans validates the Midtrans variables beyond parsing.
func (c *config) checkMidtrans() error {
	v := func(name, format string, args ...any) error {
		return fmt.Errorf("%s_%s: %s", envPrefix, name, fmt.Sprintf(format, args...))
	}
	key := c.MidtransServerKey
	if key != "" && strings.TrimSpace(key) != key {
		// The key itself is never quoted.
		return v("MIDTRANS_SERVER_KEY", "has leading or trailing white space")
	}
	u, err := midtrans.ParseAPIURL(c.MidtransAPIURL)
	if err != nil {
		return v("MIDTRANS_API_URL", "must be an absolute http(s) URL without credentials, query or fragment")
	}
	// The status call carries the server key in its Authorization header.
	if u.Scheme != "https" && !isLoopback(u.Hostname()) {
		return v("MIDTRANS_API_URL", "%s must use https (the server key is sent with every status call); plain http is allowed only for a loopback host", c.MidtransAPIURL)
	}
	if !c.MidtransVerifyStatus {
		return nil
	}
	switch {
	case key == "":
		return v("MIDTRANS_VERIFY_STATUS", "needs WEBHOOKD_MIDTRANS_SERVER_KEY")
	case strings.HasPrefix(key, "SB-") && u.Hostname() == "api.midtrans.com":
		// Sandbox transactions are unknown to the production API: every
		// notification would be refused.
		return v("MIDTRANS_API_URL", "the server key is a sandbox key (SB-...); set https://api.sandbox.midtrans.com")
	case c.Lease <= c.DispatchTimeout+midtrans.DefaultStatusTimeout+c.leaseStoreCalls():
		return v("LEASE", "%s must be longer than WEBHOOKD_DISPATCH_TIMEOUT (%s) plus the Midtrans status check (%s) plus twice WEBHOOKD_STORE_TIMEOUT (%s), or a slow delivery could be taken over and sent twice",
			c.Lease, c.DispatchTimeout, midtrans.DefaultStatusTimeout, c.StoreTimeout)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
