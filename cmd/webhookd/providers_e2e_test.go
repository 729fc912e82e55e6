package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/replay"
	"github.com/webhookd/webhookd/tracing"
)

// The end-to-end suite of the provider table: every provider webhookd
// builds in, Go adapter or spec, configured from its table entry as serve
// configures it (its example variables), behind a receiver wired as serve
// wires it (the router of the environment's one destination, an LMDB
// store), in front of a core service stand-in. It lives beside the table
// (providers.go) because the table is what it runs over: a provider added
// to the table is in the suite without a line of its own.
// Provider-specific behaviours (Adyen's batches, the status confirmations
// of Midtrans and Duitku, PayPal's certificates, DOKU's signed path) have
// their own tests in receiver/, named after the behaviour.

// notChangeable are the providers whose fixtures no body mutation turns
// into another payload under the same event key, with why: there, the
// "changed payload is 422" check has nothing to send. The suite holds the
// list to what it finds, so a provider cannot drop out of the check
// unnoticed.
var notChangeable = map[string]string{
	"shopify":      "the key is a digest of the body: another body is another event",
	"lemonsqueezy": "the key holds a digest of the body: another body is another event",
	"paystack":     "the key holds a digest of the body: another body is another event",
	"hitpay":       "the key holds a digest of the body: another body is another event",
	"flutterwave":  "the key holds a digest of the body: another body is another event",
	"snap":         "webhookd holds SNAP's public key only: a changed body fails the sender's signature",
	"winpay":       "webhookd holds Winpay's public key only: a changed body fails the sender's signature",
	"braintree": "the event is inside the signed bt_payload, which the kit's mutations of the form do not reach " +
		"(receiver/wrapped_e2e_test.go changes the amount inside it)",
}

// unsendable are the providers whose fixtures the table alone cannot
// deliver: webhookd cannot sign for them (it holds a public key, or only
// the gateway can sign), and their captured headers do not verify here.
var unsendable = map[string]string{
	"paypal": "PayPal signs with its certificate's private key, and the shipped fixtures carry no signature",
}

// TestEveryProviderEndToEnd runs, for each provider of the table: its
// first fixture forwarded once with the contract's headers and recorded
// COMPLETED; the gateway's resend replayed, not forwarded again; a changed
// payload under the same event key answered 422; a tampered body, a
// delivery signed with a secret not configured and an unsigned one
// answered 401 with the store untouched; and, where the enabling variable
// is a list, a rotation (a delivery signed with the second secret
// forwarded, the same event signed with the first replayed).
func TestEveryProviderEndToEnd(t *testing.T) {
	table := providerTable()
	require.NotEmpty(t, table)
	for _, e := range table {
		t.Run(e.Name, func(t *testing.T) { providerEndToEnd(t, e) })
	}
}

// e2eNode is one receiver of the suite and what it stores.
type e2eNode struct {
	url   string
	store *lmdb.Store
}

// records counts the node's records.
func (n e2eNode) records(t *testing.T) int {
	t.Helper()
	recs, err := n.store.List(context.Background(), dedupe.ListOptions{})
	require.NoError(t, err)
	return len(recs)
}

// post sends d to the node's route for provider, as `webhookd replay`
// sends a fixture.
func (n e2eNode) post(t *testing.T, provider string, d providers.Delivery) (int, http.Header, string) {
	t.Helper()
	target := n.url + "/webhooks/" + provider
	if len(d.Query) > 0 {
		target += "?" + d.Query.Encode()
	}
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(d.Body))
	require.NoError(t, err)
	for k, v := range d.Header {
		req.Header[k] = v
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

// fixtureRetention is the retention the suites that deliver the shipped
// fixtures run with: the longest duration webhookd takes. A fixture that
// webhookd cannot sign again (snap, winpay: the sender's private key is not
// in the repository) carries the timestamp it was signed with, which the
// default retention of a week would refuse a week later.
var fixtureRetention = providers.MaxDuration.String()

func providerEndToEnd(t *testing.T, e providers.Entry) {
	clearEnv(t)
	core := newCore(t)
	base := []string{"WEBHOOKD_DOWNSTREAM_URL=" + core.URL, "WEBHOOKD_RETENTION=" + fixtureRetention}
	var (
		secret    string
		secretVar providers.Variable
	)
	for _, v := range providers.VariablesOf(e.Settings()) {
		value := v.Example // a spec's own example
		if tv, ok := testValues[envName(v.Name)]; ok {
			value = tv
		}
		switch {
		case v.Name == e.Secret:
			secret, secretVar = value, v
		case value != "":
			base = append(base, envName(v.Name)+"="+value)
		}
	}
	require.NotEmpty(t, secret, "%s: give its enabling variable a value in testValues", e.Name)
	if statusChecked[e.Name] {
		// The fixtures are no transactions a status API knows; the
		// confirmation has its own tests (receiver/confirm_e2e_test.go).
		base = append(base, "WEBHOOKD_"+strings.ToUpper(e.Name)+"_VERIFY_STATUS=false")
	}
	// Two secrets where the variable is a list (an example may list its
	// own second item, for a format that takes no suffix), and one that
	// is not configured.
	first, second, listed := strings.Cut(secret, ",")
	rotates := secretVar.List || secretVar.Field.Kind() == reflect.Slice
	if !listed || second == first {
		second = first + "_second"
	}
	configured, stranger := first, first+"_other"
	if rotates {
		configured, stranger = first+","+second, second
	}
	configOf := func(secrets string) *config {
		t.Helper()
		cfg, err := loadConfigFrom(append(slices.Clone(base), envName(e.Secret)+"="+secrets))
		require.NoError(t, err)
		require.NoError(t, cfg.checkServe())
		return cfg
	}
	signer := func(secret string) providers.Provider {
		t.Helper()
		reg, err := buildRegistry(configOf(secret))
		require.NoError(t, err)
		require.Equal(t, []string{e.Name}, reg.Names(), "the example values enable exactly this provider")
		p, _ := reg.Lookup(e.Name)
		return p
	}
	node := func(secrets string) e2eNode {
		t.Helper()
		cfg := configOf(secrets)
		rt, err := newRouter(cfg, slog.New(slog.DiscardHandler), &tracing.Tracing{})
		require.NoError(t, err)
		store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{Lease: cfg.Lease, PruneInterval: -1}, NoSync: true})
		require.NoError(t, err)
		t.Cleanup(func() { store.Close() })
		h, err := receiver.New(receiver.Config{Routing: rt.Routes, Store: store, MaxBodyBytes: cfg.MaxBodyBytes,
			BatchTimeout: cfg.DispatchTimeout, StoreRequests: true})
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return e2eNode{url: srv.URL, store: store}
	}

	paths, err := filepath.Glob(filepath.Join("..", "..", "fixtures", e.Name, "*.json"))
	require.NoError(t, err)
	paths = slices.DeleteFunc(paths, func(p string) bool { return strings.HasSuffix(p, replay.HeadersSuffix) })
	require.GreaterOrEqual(t, len(paths), 2, "fixtures/%s: two events at least", e.Name)
	fixtures, err := replay.Load([]string{paths[0], paths[len(paths)-1]}, e.Name)
	require.NoError(t, err)
	firstFx, otherFx := fixtures[0], fixtures[1]

	p := signer(configured)
	_, signErr := providers.Sign(p, firstFx.Body)
	canSign := !errors.Is(signErr, providers.ErrCannotSign)
	deliver := func(s providers.Provider, f replay.Fixture) providers.Delivery {
		t.Helper()
		if !canSign {
			return providers.Delivery{Header: f.Header.Clone(), Body: f.Body}
		}
		d, err := providers.Sign(s, f.Body)
		require.NoError(t, err)
		return d
	}
	n := node(configured)

	d := deliver(p, firstFx)
	items, err := p.Parse(d)
	require.NoError(t, err)
	if reason, ok := unsendable[e.Name]; ok {
		require.Error(t, p.Verify(context.Background(), d), "%s is listed as unsendable (%s), yet its fixture verifies", e.Name, reason)
		t.Skipf("%s: %s", e.Name, reason)
	}
	require.NoError(t, p.Verify(context.Background(), d), "%s: the table's configuration verifies its own fixture", e.Name)

	t.Run("forwarded once with the contract's headers, resend replayed", func(t *testing.T) {
		status, _, body := n.post(t, e.Name, d)
		require.Less(t, status, 300, body)
		require.Equal(t, len(items), core.total(), "one forward per event")
		for _, it := range items {
			key := e.Name + ":" + it.Key
			require.Equal(t, 1, core.count(key), key)
			got := core.get(key, 0)
			require.Equal(t, e.Name, got.header.Get("Webhook-Provider"))
			require.Equal(t, it.Key, got.header.Get("Webhook-Event-Id"))
			require.Equal(t, it.Type, got.header.Get("Webhook-Event-Type"))
			require.Equal(t, it.Body, got.body, "the event's body, byte for byte")
			rec, err := n.store.Get(context.Background(), key)
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, rec.State, key)
		}
		if providers.AckOf(p) == nil {
			require.Equal(t, d.Body, core.get(e.Name+":"+items[0].Key, 0).body, "the raw body, byte for byte")
		}
		// The gateway's resend: the same event, signed again a moment
		// later (captured: the same request).
		again, header, body := n.post(t, e.Name, deliver(p, firstFx))
		require.Equal(t, status, again, body)
		if providers.AckOf(p) == nil {
			require.Equal(t, "true", header.Get("Idempotent-Replayed"))
		}
		require.Equal(t, len(items), core.total(), "a resend is not forwarded again")
	})

	t.Run("a changed payload under the same event key is 422", func(t *testing.T) {
		changed, found := changedPayload(t, p, d, canSign)
		if reason, listed := notChangeable[e.Name]; listed {
			require.False(t, found, "%s is listed as not changeable (%s), yet a change was found", e.Name, reason)
			t.Skipf("%s: %s", e.Name, reason)
		}
		require.True(t, found, "%s: no body mutation keeps the key and changes the payload; list it in notChangeable, saying why", e.Name)
		before := core.total()
		status, _, body := n.post(t, e.Name, changed)
		require.Equal(t, http.StatusUnprocessableEntity, status, body)
		require.Equal(t, before, core.total())
	})

	t.Run("tampered, wrong secret or unsigned is 401, store untouched", func(t *testing.T) {
		o := deliver(p, otherFx)
		before, recs := core.total(), n.records(t)
		status, _, body := n.post(t, e.Name, tampered(t, p, o))
		require.Equal(t, http.StatusUnauthorized, status, "a signed byte changed: %s", body)

		// Without its signature: the headers but its type, and the body
		// as the fixture holds it where signing wrote into the body; where
		// the fixture carries a signature of its own, its members named
		// after a signature renamed.
		unsigned := providers.Delivery{Header: http.Header{}, Query: o.Query, Body: otherFx.Body}
		for k, v := range o.Header {
			if strings.EqualFold(k, "Content-Type") {
				unsigned.Header[k] = v
			}
		}
		if p.Verify(context.Background(), unsigned) == nil {
			unsigned.Body = signatureMember.ReplaceAll(otherFx.Body, []byte("${1}_unsigned${2}"))
			require.NotEqual(t, otherFx.Body, unsigned.Body, "%s: the fixture verifies without headers, and names no signature", e.Name)
		}
		status, _, body = n.post(t, e.Name, unsigned)
		require.Equal(t, http.StatusUnauthorized, status, "no signature: %s", body)
		if canSign {
			// The wrong secret, sent to a node that has only the first.
			one := node(first)
			oneRecs := one.records(t)
			wrong := deliver(signer(stranger), otherFx)
			status, _, body = one.post(t, e.Name, wrong)
			require.Equal(t, http.StatusUnauthorized, status, "wrong secret: %s", body)
			require.Equal(t, oneRecs, one.records(t))
		}
		require.Equal(t, before, core.total())
		require.Equal(t, recs, n.records(t))
	})

	t.Run("rotation: signed with the second secret is forwarded", func(t *testing.T) {
		if !rotates || !canSign {
			t.Skipf("%s: the enabling variable holds one secret, or webhookd cannot sign", e.Name)
		}
		before := core.total()
		o := deliver(signer(second), otherFx)
		events, err := p.Parse(o)
		require.NoError(t, err)
		status, _, body := n.post(t, e.Name, o)
		require.Less(t, status, 300, body)
		require.Equal(t, before+len(events), core.total())
		// The first secret signs the same event: replayed.
		status, _, body = n.post(t, e.Name, deliver(p, otherFx))
		require.Less(t, status, 300, body)
		require.Equal(t, before+len(events), core.total())
	})
}

// signatureMember finds the name of a body member (JSON or form) that
// holds a signature: midtrans's signature_key, Adyen's hmacSignature,
// Duitku's signature.
var signatureMember = regexp.MustCompile(`(?i)([a-z_]*signature[a-z_]*)("?\s*[:=])`)

// changedPayload returns d's event with its payload changed and its key
// kept: the kit's mutations of each body member (providertest.JSON, or
// Form for a form body), signed again where webhookd signs, else sent
// with d's own signature; the first that verifies, keeps every key and
// changes a fingerprint.
func changedPayload(t *testing.T, p providers.Provider, d providers.Delivery, canSign bool) (providers.Delivery, bool) {
	t.Helper()
	want, err := p.Parse(d)
	require.NoError(t, err)
	var f providertest.Format = providertest.JSON
	if strings.HasPrefix(d.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		f = providertest.Form
	}
	resign, keepsHeaders := p.(interface {
		Resign(first providers.Delivery, body []byte) (providers.Delivery, error)
	})
	for _, name := range f.Names(t, d.Body) {
		mutated := append(f.Tamper(t, d.Body, name), f.Variants(t, d.Body, name)...)
		for _, b := range mutated {
			c := providers.Delivery{Header: d.Header, Query: d.Query, Body: b}
			if canSign {
				var err error
				// The gateway's own retry keeps what it keys by in a
				// header (an id): Resign signs afresh keeping them.
				if keepsHeaders {
					c, err = resign.Resign(d, b)
				} else {
					c, err = providers.Sign(p, b)
				}
				if err != nil {
					continue
				}
			}
			if p.Verify(context.Background(), c) != nil {
				continue
			}
			got, err := p.Parse(c)
			if err != nil || len(got) != len(want) {
				continue
			}
			sameKeys, changed := true, false
			for i := range got {
				sameKeys = sameKeys && got[i].Key == want[i].Key
				changed = changed || got[i].Fingerprint != want[i].Fingerprint
			}
			if sameKeys && changed {
				return c, true
			}
		}
	}
	return providers.Delivery{}, false
}

// tampered returns d with one byte changed that its signature covers: the
// first of the kit's mutations of the body's members (providertest.JSON,
// or Form for a form body), else of its headers and query values (a
// provider that signs no body: a token, a manifest), that no longer
// verifies.
func tampered(t *testing.T, p providers.Provider, d providers.Delivery) providers.Delivery {
	t.Helper()
	refused := func(c providers.Delivery) bool {
		return errors.Is(p.Verify(context.Background(), c), providers.ErrUnauthorized)
	}
	var f providertest.Format = providertest.JSON
	if strings.HasPrefix(d.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		f = providertest.Form
	}
	for _, name := range f.Names(t, d.Body) {
		for _, b := range f.Tamper(t, d.Body, name) {
			if c := (providers.Delivery{Header: d.Header, Query: d.Query, Body: b}); refused(c) {
				return c
			}
		}
	}
	for name, values := range d.Header {
		if strings.EqualFold(name, "Content-Type") || len(values) == 0 || values[0] == "" {
			continue
		}
		c := providers.Delivery{Header: d.Header.Clone(), Query: d.Query, Body: d.Body}
		v := []byte(values[0])
		v[len(v)-1] ^= 1
		c.Header[name] = []string{string(v)}
		if refused(c) {
			return c
		}
	}
	for name, values := range d.Query {
		if len(values) == 0 || values[0] == "" {
			continue
		}
		c := providers.Delivery{Header: d.Header, Query: url.Values{}, Body: d.Body}
		for k, v := range d.Query {
			c.Query[k] = slices.Clone(v)
		}
		c.Query.Set(name, values[0]+"0")
		if refused(c) {
			return c
		}
	}
	t.Fatalf("no change of the body, a header or a query value makes the signature fail")
	return providers.Delivery{}
}
