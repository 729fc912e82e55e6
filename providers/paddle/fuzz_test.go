package paddle_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paddle"
	"github.com/webhookd/webhookd/providers/providertest"
)

// FuzzVerify checks that no header or body makes Verify panic, and that every
// rejection wraps providers.ErrUnauthorized.
func FuzzVerify(f *testing.F) {
	for _, s := range []string{vecGoHeader, vecNodeHeader, vecNodeMultiHeader, vecPyHeader, "invalid_header", "h1=x",
		"ts=1234;h2=x", "ts=;h1=", ";;", "ts=0;h1=00", "ts=99999999999999999999;h1=", "ts=1710929255;ts=1710929255", ""} {
		f.Add(s, []byte(vecGoBody))
	}
	f.Add(vecGoHeader, []byte{})
	a, err := paddle.New([]string{vecGoSecret, vecNodeSecret, vecPySecretGood}, tolerance,
		paddle.WithClock(func() time.Time { return at(vecGoTS, 0) }))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := a.Verify(context.Background(), providers.Delivery{Header: http.Header{paddle.HeaderName: {header}}, Body: body})
		if err != nil && !errors.Is(err, providers.ErrUnauthorized) {
			t.Fatalf("Verify error %v does not wrap providers.ErrUnauthorized", err)
		}
	})
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzParse checks that no body makes Parse panic, that every rejection wraps
// providers.ErrMalformed, and that an accepted body yields a usable event.
func FuzzParse(f *testing.F) {
	for _, name := range fixtureNames(f) {
		f.Add(readFixture(f, name))
	}
	for _, s := range []string{vecGoBody, vecNodeBody, "", "null", "[]", `{"event_id":1}`, `{"event_id":"evt_1","event_id":"evt_2"}`,
		`{"event_id":"evt_1","Event_Type":"x"}`, `{"event_id":"evt_1","data":{"a":1,"A":2}}`} {
		f.Add([]byte(s))
	}
	a, err := paddle.New([]string{vecGoSecret}, tolerance)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
		if err != nil {
			if !errors.Is(err, providers.ErrMalformed) {
				t.Fatalf("Parse error %v does not wrap providers.ErrMalformed", err)
			}
			return
		}
		if !providers.IsToken(ev.Key, paddle.MaxTokenBytes) || !hex64.MatchString(ev.Fingerprint) ||
			(ev.Type != "" && !providers.IsToken(ev.Type, paddle.MaxTokenBytes)) {
			t.Fatalf("Parse accepted %q with event %+v", body, ev)
		}
	})
}
