package adapter_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
	"github.com/webhookd/webhookd/signature"
)

var (
	errNotSigned = errors.New("not signed")
	errInvalid   = errors.New("invalid")
	errTooOld    = errors.New("too old")
	errTooNew    = errors.New("too new")
)

func TestHeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   string
		err    error
		msg    string
	}{
		{"one", []string{"t=1,v1=ab"}, "t=1,v1=ab", nil, ""},
		{"absent", nil, "", errNotSigned, "not signed"},
		{"empty", []string{""}, "", errNotSigned, "not signed"},
		{"twice", []string{"a", "b"}, "", errInvalid, "invalid (sent 2 times)"},
		{"empty twice", []string{"", ""}, "", errInvalid, "invalid (sent 2 times)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.values {
				h.Add("Stripe-Signature", v)
			}
			got, err := adapter.Header(h, "Stripe-Signature", errNotSigned, errInvalid)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.EqualError(t, err, tc.msg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestWindow(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	w, err := adapter.NewWindow("stripe", time.Minute)
	require.NoError(t, err)
	w.Clock.Set(func() time.Time { return now })
	for _, tc := range []struct {
		name   string
		w      adapter.Window
		ts     time.Time
		tooNew error
		want   error
	}{
		{"now", w, now, errTooNew, nil},
		{"at the edge", w, now.Add(-time.Minute), errTooNew, nil},
		{"too old", w, now.Add(-time.Minute - time.Second), errTooNew, errTooOld},
		{"zero time is too old", w, time.Time{}, errTooNew, errTooOld},
		{"ahead within", w, now.Add(time.Minute), errTooNew, nil},
		{"too far ahead", w, now.Add(time.Minute + time.Second), errTooNew, errTooNew},
		{"one-sided accepts any future", w, now.Add(time.Hour), nil, nil},
		{"zero window fails closed", adapter.Window{}, now, errTooNew, providers.ErrUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.w.Check("stripe", tc.ts, errTooOld, tc.tooNew)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
	err = adapter.Window{}.Check("stripe", now, errTooOld, nil)
	require.EqualError(t, err, providers.ErrUnauthorized.Error()+": stripe: adapter not configured: "+signature.ErrInvalidTolerance.Error())
}

func TestNewWindow(t *testing.T) {
	for _, tc := range []struct {
		tolerance time.Duration
		err       string
	}{
		{time.Second, ""},
		{0, "paddle: tolerance must be positive, got 0s"},
		{-time.Second, "paddle: tolerance must be positive, got -1s"},
	} {
		w, err := adapter.NewWindow("paddle", tc.tolerance)
		if tc.err != "" {
			require.EqualError(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.tolerance, w.Tolerance)
	}
}

func TestSecrets(t *testing.T) {
	s, err := adapter.NewSecrets("stripe", "signing secret", []string{"new", "old"})
	require.NoError(t, err)
	msg := []byte("1.{}")
	underOld := signature.HMACSHA256([]byte("old"), msg)
	for _, tc := range []struct {
		name string
		s    adapter.Secrets
		sigs [][]byte
		want bool
	}{
		{"old secret", s, [][]byte{[]byte("junk"), underOld}, true},
		{"no match", s, [][]byte{signature.HMACSHA256([]byte("other"), msg)}, false},
		{"no signature", s, nil, false},
		{"zero Secrets matches nothing", adapter.Secrets{}, [][]byte{underOld}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.s.Match(tc.sigs, []byte("1."), []byte("{}")))
		})
	}

	_, err = adapter.NewSecrets("stripe", "signing secret", nil)
	require.EqualError(t, err, "stripe: no signing secret configured")

	d, err := s.Sign("stripe", "signing secret", "Stripe-Signature", []byte("{}"), func(secret string) string { return "under " + secret })
	require.NoError(t, err)
	require.Equal(t, "under new", d.Header.Get("Stripe-Signature"))
	require.Equal(t, []byte("{}"), d.Body)
	_, err = adapter.Secrets{}.Sign("stripe", "signing secret", "Stripe-Signature", nil, nil)
	require.EqualError(t, err, "stripe: no signing secret configured")
}

func TestBuild(t *testing.T) {
	type a struct{ clock adapter.Clock }
	pinned := time.Unix(42, 0)
	clock := func(x *a) *adapter.Clock { return &x.clock }
	got, err := adapter.Build(&a{}, []adapter.Option[a]{adapter.WithClock(clock, func() time.Time { return pinned })})
	require.NoError(t, err)
	require.Equal(t, pinned, got.clock.Now())

	bad := errors.New("bad option")
	got, err = adapter.Build(&a{}, []adapter.Option[a]{func(*a) error { return bad }})
	require.ErrorIs(t, err, bad)
	require.Nil(t, got)
}
