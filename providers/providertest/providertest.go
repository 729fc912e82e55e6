// Package providertest is the conformance kit every provider adapter runs
// in its own tests, in one call:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Kit{
//			New: func(secret string, now func() time.Time) (providers.Provider, error) {
//				return stripe.New([]string{secret}, 5*time.Minute, stripe.WithClock(now))
//			},
//			Secret:      "whsec_conformance_a",
//			OtherSecret: "whsec_conformance_b",
//			Fixtures:    "../../fixtures/stripe",
//			Retry:       providertest.BumpPendingWebhooks,
//		})
//	}
//
// For every fixture in the folder it checks what the receiver relies on: a
// body signed by the adapter's own Sign verifies and parses into a usable
// event; a changed byte of the signature or of what it signs, a missing
// signature and a wrong secret are refused with an error wrapping
// providers.ErrUnauthorized; the provider's own retry of the event (re-signed
// later, with whatever the provider changes between attempts) has the same
// key, type and fingerprint; and different fixtures have different keys.
//
// It is test support only: nothing outside _test.go files may import it.
package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// MinFixtures is how many fixtures the kit requires per provider: enough to
// cover a provider's main events and to make "distinct events have distinct
// keys" mean something.
const MinFixtures = 4

// MaxTypeBytes is the longest event type the kit accepts.
const MaxTypeBytes = 255

// RetryDelay is how much later than the first delivery the kit signs a
// provider's retry. It is inside every adapter's replay tolerance and long
// enough to give a timestamped signature a different timestamp.
const RetryDelay = 2 * time.Minute

// Kit describes the adapter under test. New, Secret, OtherSecret and Fixtures
// are required; the rest describe how the provider signs and retries.
type Kit struct {
	// New builds the adapter under test with secret as its only secret
	// (signing secret, server key or callback token), reading the current
	// time from now; an adapter without a clock ignores now. The adapter
	// must implement providers.Signer.
	New func(secret string, now func() time.Time) (providers.Provider, error)
	// Secret and OtherSecret are two different secrets New accepts.
	Secret, OtherSecret string
	// Fixtures is the folder of raw bodies, fixtures/<provider>. Every
	// *.json file in it is one event; there must be at least MinFixtures.
	Fixtures string
	// Retry returns a body as the provider sends it again on its own retry
	// of the same event, before signing (Stripe counts pending_webhooks
	// down). It must change the body. Nil means the provider resends the
	// body unchanged: the retry is then only signed again, later.
	Retry func(body []byte) []byte
	// SignatureField names the top-level body member that carries the
	// signature, for a provider that signs inside the body (Midtrans's
	// signature_key). Empty means the signature is in the headers Sign
	// returns.
	SignatureField string
	// SignedFields lists the top-level members the signature covers, for a
	// provider whose signature covers only part of the body (Midtrans's
	// order_id, status_code and gross_amount). Nil means the signature
	// covers every byte of the body, unless BodyUnsigned is set.
	SignedFields []string
	// BodyUnsigned says the provider's signature does not cover the body at
	// all (Xendit's static callback token); only the token is tampered with.
	BodyUnsigned bool
}

// Run runs the conformance checks for k, one subtest per fixture plus one
// across all of them.
func Run(t *testing.T, k Kit) {
	t.Helper()
	require.NotNil(t, k.New, "Kit.New is required")
	require.NotEmpty(t, k.Secret, "Kit.Secret is required")
	require.NotEmpty(t, k.OtherSecret, "Kit.OtherSecret is required")
	require.NotEqual(t, k.Secret, k.OtherSecret, "Kit.Secret and Kit.OtherSecret must differ")
	require.False(t, k.BodyUnsigned && k.SignedFields != nil, "Kit.BodyUnsigned and Kit.SignedFields exclude each other")

	paths, err := filepath.Glob(filepath.Join(k.Fixtures, "*.json"))
	require.NoError(t, err)
	sort.Strings(paths)
	require.GreaterOrEqual(t, len(paths), MinFixtures, "fixtures in %s", k.Fixtures)

	c := &clock{t: time.Now().Truncate(time.Second)}
	keys := map[string]string{}
	for _, path := range paths {
		name := filepath.Base(path)
		body, err := os.ReadFile(path)
		require.NoError(t, err)
		var ev providers.Event
		t.Run(name, func(t *testing.T) {
			ev = k.check(t, c, body)
		})
		if ev.Key != "" {
			if other, dup := keys[ev.Key]; dup {
				t.Errorf("%s and %s have the same event key %q: distinct events need distinct keys", other, name, ev.Key)
			}
			keys[ev.Key] = name
		}
	}
}

// check runs every per-fixture check and returns the fixture's event.
func (k Kit) check(t *testing.T, c *clock, fixture []byte) providers.Event {
	c.set(c.get().Add(time.Hour)) // each fixture starts at a fresh time
	p := k.adapter(t, k.Secret, c)
	other := k.adapter(t, k.OtherSecret, c)
	signer := p.(providers.Signer)

	// A signed fixture verifies and parses into a usable event, the same
	// event as the unsigned fixture: signing changes no part of the event.
	body, h, err := signer.Sign(bytes.Clone(fixture))
	require.NoError(t, err, "Sign")
	require.NoError(t, p.Verify(h, body), "a body signed by Sign must verify")
	ev, err := p.Parse(body)
	require.NoError(t, err, "Parse of a signed fixture")
	requireUsable(t, p.Name(), ev)
	if k.SignatureField == "" {
		require.Equal(t, fixture, body, "Sign must not change a body whose signature is in the headers")
	}
	if unsigned, err := p.Parse(fixture); err == nil {
		require.Equal(t, ev, unsigned, "signing must not change the event")
	}

	t.Run("changed signature byte is refused", func(t *testing.T) {
		n := 0
		for name, values := range h {
			for i, v := range values {
				for _, at := range positions(len(v)) {
					bad := h.Clone()
					bad[name][i] = flip(v, at)
					requireRefused(t, p, bad, body, "header %s, byte %d changed", name, at)
					n++
				}
			}
		}
		if k.SignatureField != "" {
			m := member(t, body, k.SignatureField)
			for _, at := range positions(m.End - m.Start - 2) {
				requireRefused(t, p, h, flipAt(body, m.Start+1+at), "%s, byte %d changed", k.SignatureField, at)
				n++
			}
		}
		require.NotZero(t, n, "Sign produced no signature to tamper with")
	})

	t.Run("changed signed byte is refused", func(t *testing.T) {
		switch {
		case k.BodyUnsigned:
			t.Skip("the provider's signature does not cover the body")
		case k.SignedFields != nil:
			for _, f := range k.SignedFields {
				m := member(t, body, f)
				require.Greater(t, m.End-m.Start, 2, "signed field %s is empty", f)
				// Inside the quotes of a string, anywhere in a number.
				lo, n := m.Start, m.End-m.Start
				if body[m.Start] == '"' {
					lo, n = m.Start+1, n-2
				}
				for _, at := range positions(n) {
					requireRefused(t, p, h, flipAt(body, lo+at), "signed field %s, byte %d changed", f, at)
				}
			}
		default:
			for _, at := range positions(len(body)) {
				requireRefused(t, p, h, flipAt(body, at), "body byte %d changed", at)
			}
		}
	})

	t.Run("missing signature is refused", func(t *testing.T) {
		stripped := body
		if k.SignatureField != "" {
			for _, without := range [][]byte{
				withMember(t, body, k.SignatureField, ""),
				withMember(t, body, k.SignatureField, "null"),
				withMember(t, body, k.SignatureField, `""`),
			} {
				requireRefused(t, p, h, without, "%s removed or emptied", k.SignatureField)
			}
			stripped = withMember(t, body, k.SignatureField, "")
		}
		requireRefused(t, p, nil, stripped, "no headers")
		requireRefused(t, p, http.Header{}, stripped, "empty headers")
		empty := http.Header{}
		for name := range h {
			empty[name] = []string{""}
		}
		requireRefused(t, p, empty, stripped, "signature headers present but empty")
	})

	t.Run("wrong secret is refused", func(t *testing.T) {
		requireRefused(t, other, h, body, "signed with Secret, verified with OtherSecret")
		otherBody, otherH, err := other.(providers.Signer).Sign(bytes.Clone(fixture))
		require.NoError(t, err)
		require.NoError(t, other.Verify(otherH, otherBody))
		requireRefused(t, p, otherH, otherBody, "signed with OtherSecret, verified with Secret")
	})

	t.Run("provider retry keeps key, type and fingerprint", func(t *testing.T) {
		retry := bytes.Clone(fixture)
		if k.Retry != nil {
			retry = k.Retry(retry)
			require.NotEqual(t, fixture, retry, "Kit.Retry must change the body")
		}
		c.set(c.get().Add(RetryDelay))
		retryBody, retryH, err := signer.Sign(retry)
		require.NoError(t, err)
		require.NoError(t, p.Verify(retryH, retryBody), "the retry must verify")
		got, err := p.Parse(retryBody)
		require.NoError(t, err)
		require.Equal(t, ev, got, "a retry of one event must have the same key, type and fingerprint")
		// The first attempt still verifies: signatures do not depend on
		// anything that changed since.
		if k.Retry == nil {
			require.NoError(t, p.Verify(h, body))
		}
	})
	return ev
}

func (k Kit) adapter(t *testing.T, secret string, c *clock) providers.Provider {
	t.Helper()
	p, err := k.New(secret, c.get)
	require.NoError(t, err, "Kit.New")
	require.NotNil(t, p)
	_, ok := p.(providers.Signer)
	require.True(t, ok, "%T must implement providers.Signer", p)
	return p
}

// requireUsable checks that an event can be stored and sent on: the receiver
// refuses anything else with 400.
func requireUsable(t *testing.T, provider string, ev providers.Event) {
	t.Helper()
	require.True(t, providers.IsToken(ev.Key, dedupe.MaxKeyLen-len(provider)-1),
		"key %q must be printable ASCII without spaces, short enough for the store", ev.Key)
	if ev.Type != "" {
		require.True(t, providers.IsToken(ev.Type, MaxTypeBytes), "type %q must be a header-safe token", ev.Type)
	}
	require.NotEmpty(t, ev.Fingerprint, "fingerprint")
}

func requireRefused(t *testing.T, p providers.Provider, h http.Header, body []byte, msg string, args ...any) {
	t.Helper()
	err := p.Verify(h, body)
	what := fmt.Sprintf(msg, args...)
	require.Error(t, err, what)
	require.ErrorIs(t, err, providers.ErrUnauthorized, what)
}

// positions picks up to five byte offsets spread over n bytes.
func positions(n int) []int {
	if n <= 0 {
		return nil
	}
	seen := map[int]bool{}
	var out []int
	for _, at := range []int{0, n / 4, n / 2, 3 * n / 4, n - 1} {
		if !seen[at] {
			seen[at] = true
			out = append(out, at)
		}
	}
	return out
}

// flip changes one bit of s[at]. XOR 1 never turns a letter into its other
// case, so a hex digit cannot change into an equivalent one.
func flip(s string, at int) string {
	b := []byte(s)
	b[at] ^= 0x01
	return string(b)
}

func flipAt(body []byte, at int) []byte {
	b := bytes.Clone(body)
	b[at] ^= 0x01
	return b
}

func member(t *testing.T, body []byte, name string) rawjson.Member {
	t.Helper()
	o, err := rawjson.Parse(body)
	require.NoError(t, err)
	m, ok := o.Get(name)
	require.True(t, ok, "member %s missing from the signed body", name)
	return m
}

// withMember returns body re-encoded with the top-level member name set to
// the raw JSON value, or removed when value is "".
func withMember(t *testing.T, body []byte, name, value string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	if value == "" {
		delete(m, name)
	} else {
		m[name] = json.RawMessage(value)
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

type clock struct{ t time.Time }

func (c *clock) get() time.Time  { return c.t }
func (c *clock) set(t time.Time) { c.t = t }

var pendingWebhooks = regexp.MustCompile(`"pending_webhooks"(\s*):(\s*)([0-9]+)`)

// BumpPendingWebhooks is Stripe's Kit.Retry: it adds one to the event's
// pending_webhooks, which Stripe changes between attempts of one event, and
// leaves every other byte alone. A body without pending_webhooks is returned
// unchanged (and then fails the kit's "Retry must change the body" check).
func BumpPendingWebhooks(body []byte) []byte {
	return pendingWebhooks.ReplaceAllFunc(body, func(m []byte) []byte {
		sub := pendingWebhooks.FindSubmatch(m)
		n, err := strconv.Atoi(string(sub[3]))
		if err != nil {
			return m
		}
		return fmt.Appendf(nil, `"pending_webhooks"%s:%s%d`, sub[1], sub[2], n+1)
	})
}
