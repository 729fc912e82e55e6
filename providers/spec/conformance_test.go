package spec

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	fixturefile "github.com/webhookd/webhookd/providers/fixture"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// TestSpecsConform runs every spec, built in or under testdata, through
// what the receiver relies on, using its fixtures (fixtures/<name>/*.json)
// or, without any, its examples' bodies: signed by Sign, each verifies and
// parses into events with usable keys; a retry signed later keeps every
// key and fingerprint; a missing signature, a wrong secret and a changed
// byte of a signed body are refused, each with its reason (a stale timestamp
// too, for a spec that signs one); a rotation's old secret still
// verifies; different bodies are different events.
func TestSpecsConform(t *testing.T) {
	specs, err := Builtin()
	require.NoError(t, err)
	local, err := LoadPath("testdata")
	require.NoError(t, err)
	for _, s := range append(specs, local...) {
		t.Run(s.name, func(t *testing.T) { conform(t, s) })
	}
}

// secretFor encodes a secret as the spec's secrets are written.
func secretFor(s *Spec, raw string) string {
	switch s.secret.encoding {
	case "pem":
		return testSenderPEM(raw)
	case "hex":
		raw = hex.EncodeToString([]byte(raw))
	case "base64":
		raw = base64.StdEncoding.EncodeToString([]byte(raw))
	}
	return s.secret.trimPrefix + raw
}

func conform(t *testing.T, s *Spec) {
	bodies := map[string][]byte{}
	paths, err := filepath.Glob(filepath.Join("..", "..", "fixtures", s.name, "*.json"))
	require.NoError(t, err)
	for _, p := range paths {
		if strings.HasSuffix(p, fixturefile.HeadersSuffix) {
			continue
		}
		bodies[p], err = os.ReadFile(p)
		require.NoError(t, err)
	}
	if len(bodies) == 0 {
		for _, ex := range s.examples {
			bodies["example "+ex.name] = ex.body
		}
	}
	now := time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)
	settings := s.examples[0].settings
	a, b := secretFor(s, "conformance-a"), secretFor(s, "conformance-b")
	at := func(secrets []string, t0 time.Time) *Provider {
		p, err := newTest(s, secrets, settings, func() time.Time { return t0 })
		require.NoError(t, err)
		return p
	}
	signer, other, rotation := at([]string{a}, now), at([]string{b}, now), at([]string{b, a}, now)
	retrier := at([]string{a}, now.Add(2*time.Minute))
	ctx := context.Background()
	keys := map[string]string{}
	for name, body := range bodies {
		d, err := signer.Sign(body)
		require.NoError(t, err, name)
		require.NoError(t, signer.Verify(ctx, d), name)
		require.NoError(t, rotation.Verify(ctx, d), "%s: the old secret of a rotation", name)
		require.ErrorIs(t, other.Verify(ctx, d), providers.ErrUnauthorized, "%s: another secret", name)
		require.Equal(t, providers.ReasonSignatureInvalid, providers.Reason(other.Verify(ctx, d)), "%s: another secret", name)
		if s.ts != nil {
			// A day later is past every spec's tolerance and inside none;
			// without a tolerance, 8 days is past the default retention.
			late := at([]string{a}, now.Add(24*time.Hour))
			switch {
			case s.ts.ref.kind == jsonRef:
				// The body's own time, not the signing's: 8 days after
				// it is past the default retention.
				o, err := rawjson.Parse(d.Body)
				require.NoError(t, err, name)
				v, _, _ := lookup(o, s.ts.ref.path)
				sent, err := strconv.ParseInt(v, 10, 64)
				require.NoError(t, err, name)
				late, err = newTest(s, []string{a}, settings, func() time.Time { return time.Unix(sent, 0).Add(8 * 24 * time.Hour) }, WithRetention(168*time.Hour))
				require.NoError(t, err)
			case s.ts.tolerance < 0:
				late, err = newTest(s, []string{a}, settings, func() time.Time { return now.Add(8 * 24 * time.Hour) }, WithRetention(168*time.Hour))
				require.NoError(t, err)
			}
			require.Equal(t, providers.ReasonTimestamp, providers.Reason(late.Verify(ctx, d)), "%s: a stale timestamp", name)
		}

		unsigned := providers.Delivery{Header: d.Header.Clone(), Query: d.Query, Body: d.Body}
		unsigned.Header.Del(s.sig.header)
		if s.sig.field != "" {
			f, err := parseForm(d.Body)
			require.NoError(t, err, name)
			unsigned.Body = f.With(d.Body, s.sig.field, "")
		}
		require.ErrorIs(t, signer.Verify(ctx, unsigned), ErrNotSigned, name)
		require.Equal(t, providers.ReasonSignatureMissing, providers.Reason(signer.Verify(ctx, unsigned)), name)
		if s.form {
			// A byte of the first signed field's value.
			i := slices.IndexFunc(s.sig.signed.parts, func(p part) bool { return p.kind == formRef })
			at := bytes.Index(d.Body, []byte(s.sig.signed.parts[i].text+"=")) + len(s.sig.signed.parts[i].text) + 1
			changed := append(append(bytes.Clone(d.Body[:at]), 'x'), d.Body[at:]...)
			require.ErrorIs(t, signer.Verify(ctx, providers.Delivery{Header: d.Header, Body: changed}), ErrNoValidSignature, name)
		}
		if s.sig.signed.has(bodyRef, "") {
			changed := bytes.Clone(body)
			i := bytes.IndexByte(changed, ':') + 1
			if s.compacts() {
				// Whitespace between tokens is not signed: a byte inside
				// the first string is.
				i = bytes.IndexByte(changed, '"') + 1
			}
			changed = append(changed[:i:i], append([]byte(" "), changed[i:]...)...)
			require.ErrorIs(t, signer.Verify(ctx, providers.Delivery{Header: d.Header, Query: d.Query, Body: changed}), ErrNoValidSignature, name)
		}

		items, err := signer.Parse(d)
		require.NoError(t, err, name)
		retry, err := retrier.Sign(body)
		require.NoError(t, err, name)
		require.NoError(t, signer.Verify(ctx, retry), name)
		again, err := retrier.Parse(retry)
		require.NoError(t, err, name)
		require.Len(t, again, len(items), name)
		for i, it := range items {
			require.True(t, providers.IsToken(it.Key, MaxKeyBytes), "%s: key %q", name, it.Key)
			require.Equal(t, it.Event, again[i].Event, "%s: a retry is the same event", name)
			prev, dup := keys[it.Key]
			require.False(t, dup, "%s and %s share the key %s", name, prev, it.Key)
			keys[it.Key] = name
		}
	}
}

// compacts reports whether s signs a digest of the compacted body.
func (s *Spec) compacts() bool {
	for _, p := range s.sig.signed.parts {
		if p.kind == bodyRef && p.compact {
			return true
		}
	}
	return false
}
