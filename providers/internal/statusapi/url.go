package statusapi

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// ParseAPIURL's errors, each wrapped with the provider's name. None quotes
// the URL, which may carry a password.
var (
	// ErrNotAbsolute means the URL is not an absolute http or https URL
	// with a host.
	ErrNotAbsolute = errors.New("API URL is not an absolute http(s) URL")
	// ErrURLExtras means the URL has user information, a query or a
	// fragment.
	ErrURLExtras = errors.New("API URL must not have credentials, a query or a fragment")
	// ErrPlainHTTP means the URL is plain http to a host that is not
	// loopback.
	ErrPlainHTTP = errors.New("API URL must use https (credentials are sent to it); plain http is allowed only for a loopback host")
)

// IsLoopback reports whether host (a URL's Hostname, without port or
// brackets) is "localhost" or a loopback IP address: the only hosts that a
// credential may be sent to over plain http, since the traffic never leaves
// the machine (a local stand-in in tests).
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ParseAPIURL checks the base URL of a provider's API that a request
// carrying credentials (a server key in a header, an API key in a
// signature, a client secret) is sent to: an absolute https URL with a
// host, or plain http to a loopback host only, without user information,
// query or fragment. A trailing slash is dropped. Every adapter parses its
// API URL here, in New as well as in its settings' Check, so that an
// adapter built as a library cannot send its credentials in clear either.
// provider names the adapter in the error.
func ParseAPIURL(provider, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("%s: %w", provider, ErrNotAbsolute)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("%s: %w", provider, ErrURLExtras)
	}
	if u.Scheme != "https" && !IsLoopback(u.Hostname()) {
		// The request carries a credential, and its answer decides what
		// is forwarded: over plain http both could be read or forged on
		// the way.
		return nil, fmt.Errorf("%s: %w", provider, ErrPlainHTTP)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u, nil
}

var decimalRE = regexp.MustCompile(`^([0-9]+)(?:\.([0-9]+))?$`)

// SameDecimal reports whether a and b are plain decimals (digits, an
// optional fraction, no sign or exponent) of equal value, compared digit by
// digit so that no float rounding can make two amounts equal: "60000.00",
// "60000" and "060000.0" are the same, "60000.01" is not. Anything else is
// never the same as anything.
func SameDecimal(a, b string) bool {
	na, ok1 := normDecimal(a)
	nb, ok2 := normDecimal(b)
	return ok1 && ok2 && na == nb
}

// normDecimal writes a plain decimal without leading zeros in its whole
// part and trailing zeros in its fraction.
func normDecimal(s string) (string, bool) {
	m := decimalRE.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	whole := strings.TrimLeft(m[1], "0")
	if whole == "" {
		whole = "0"
	}
	return whole + "." + strings.TrimRight(m[2], "0"), true
}

// CheckLease refuses a lease (WEBHOOKD_LEASE) that does not cover what runs
// under one claim when an adapter confirms each event with its provider
// before forwarding it: the forward (env.DispatchTimeout), the
// confirmation (confirm, named by what) and the store's calls
// (env.StoreCalls). A shorter lease lets a slow delivery be taken over by
// the provider's retry and sent twice.
func CheckLease(env providers.Env, what string, confirm time.Duration) error {
	if env.Lease > env.DispatchTimeout+confirm+env.StoreCalls {
		return nil
	}
	return fmt.Errorf("%s: %s must be longer than %s (%s) plus the %s (%s) plus the store's calls (%s, twice %s), or a slow delivery could be taken over and sent twice",
		env.Var("LEASE"), env.Lease, env.Var("DISPATCH_TIMEOUT"), env.DispatchTimeout, what, confirm, env.StoreCalls, env.Var("STORE_TIMEOUT"))
}
