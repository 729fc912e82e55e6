package dispatch

import (
	"errors"
	"net/url"
	"strings"
)

// RedactURL returns raw without what commonly carries a credential: the
// user information, the query (replaced by "redacted") and the fragment.
// The core service URL often authenticates webhookd with a token in its
// query, so it is only ever logged or reported in this form. A URL that
// does not parse is replaced as a whole.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "redacted"
	}
	u.ForceQuery = false
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// redactedError is err with every spelling of the core service URL that its
// message may contain replaced by the redacted form. It unwraps to err, so
// errors.Is still sees timeouts and cancellations.
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr hides the URLs in err's message: the configured one and the one
// net/http reports (*url.Error holds the request URL as net/url printed it,
// which may differ from the configured spelling).
func (f *Forwarder) redactErr(err error) error {
	if err == nil {
		return nil
	}
	msg := f.redact(err.Error())
	var ue *url.Error
	if errors.As(err, &ue) && ue.URL != "" {
		msg = strings.ReplaceAll(msg, ue.URL, RedactURL(ue.URL))
	}
	return &redactedError{err: err, msg: msg}
}

// redact replaces the configured URL, and its net/url spelling, in s.
func (f *Forwarder) redact(s string) string {
	for _, u := range f.urlSpellings {
		s = strings.ReplaceAll(s, u, f.redacted)
	}
	return s
}
