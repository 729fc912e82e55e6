package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
)

// numericVar is a variable whose value is a number or a duration, with the
// variables that enable its provider (none for config's own).
type numericVar struct {
	key      string
	duration bool
	enabling map[string]string
}

// numericVars lists every numeric and duration variable webhookd reads:
// config's fields and every provider's settings, by their types, so that a
// variable added later is swept too. A provider spec's variables are
// strings: those whose default is a duration are durations.
func numericVars(t *testing.T) []numericVar {
	var out []numericVar
	add := func(vars []envVar, enabling map[string]string) {
		for _, v := range vars {
			var isDuration, isInt bool
			if v.field.IsValid() {
				isDuration = v.field.Type() == durationType
				k := v.field.Kind()
				isInt = !isDuration && (k == reflect.Int || k == reflect.Int64 || k == reflect.Int32)
			} else if _, err := time.ParseDuration(v.def); err == nil {
				isDuration = true
			}
			if isDuration || isInt {
				out = append(out, numericVar{key: v.key, duration: isDuration, enabling: enabling})
			}
		}
	}
	add(envVars(&config{}), nil)
	for _, e := range providerTable() {
		vars := envVars(e.Settings())
		enabling := map[string]string{}
		for _, v := range vars {
			if testValue(v) != "" {
				enabling[v.key] = testValue(v)
			}
		}
		require.NotEmpty(t, enabling, "%s: an enabling variable with a value in testValues (testvalues_test.go)", e.Name)
		add(vars, enabling)
	}
	return out
}

// TestEveryNumericValue is issue 26's item 5 for every variable: zero, a
// negative value, the largest and smallest values that parse, and values
// whose sums overflow (twice a huge lease, a huge duration added to now).
// Each is either refused at start with one line that names the variable,
// or serve takes it and answers a delivery normally: forwarded once, its
// resend replayed. WEBHOOKD_MAX_BODY_BYTES=9223372036854775807 started, and
// then every POST panicked (500).
func TestEveryNumericValue(t *testing.T) {
	durations := []string{"0s", "-1ns", "1ns", "1000000000000000000ns", "876000h", "876000h0m0.000000001s",
		"2562047h47m16.854775807s", "-2562047h47m16.854775808s"}
	ints := []string{"0", "-1", "1", "1048576", "4611686018427387904", strconv.FormatInt(math.MaxInt64, 10), strconv.FormatInt(math.MinInt64, 10)}
	c := newCore(t)
	vars := numericVars(t)
	require.Greater(t, len(vars), 15, "config's and the providers' numeric variables")
	accepted := 0
	for _, nv := range vars {
		values := ints
		if nv.duration {
			values = durations
		}
		for _, value := range values {
			t.Run(nv.key+"="+value, func(t *testing.T) {
				env := map[string]string{}
				for k, v := range nv.enabling {
					env[k] = v
				}
				for k, v := range map[string]string{
					"WEBHOOKD_DATA_DIR": t.TempDir(), "WEBHOOKD_DOWNSTREAM_URL": c.URL,
					"WEBHOOKD_STRIPE_SECRETS": testSecret, "WEBHOOKD_ADDR": "127.0.0.1:0", "WEBHOOKD_ADMIN_ADDR": "",
				} {
					env[k] = v
				}
				env[nv.key] = value
				var environ []string
				for k, v := range env {
					environ = append(environ, k+"="+v)
				}
				cfg, err := loadConfigFrom(environ)
				if err == nil {
					err = cfg.checkServe()
				}
				if err != nil {
					require.Contains(t, err.Error(), nv.key, "the error names the variable")
					require.True(t, strings.HasPrefix(err.Error(), "WEBHOOKD_"), "a variable first: %q", err)
					require.NotContains(t, err.Error(), "\n", "one line")
					return
				}
				accepted++
				// The contract's lease rule, in arithmetic that cannot
				// overflow: an accepted store timeout fits in the lease
				// with the forward.
				require.Greater(t, float64(cfg.Lease), float64(cfg.DispatchTimeout)+2*float64(cfg.StoreTimeout),
					"lease %s, dispatch %s, store %s", cfg.Lease, cfg.DispatchTimeout, cfg.StoreTimeout)
				deliverThroughServe(t, cfg, c, nv.key+"="+value)
			})
		}
	}
	t.Logf("%d variables, %d values accepted and served", len(vars), accepted)
}

// deliverThroughServe runs serve with cfg, posts one signed Stripe event
// (id names it) and its resend, and stops serve.
func deliverThroughServe(t *testing.T, cfg *config, c *core, id string) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- serve(ctx, cfg, slog.New(slog.DiscardHandler), ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-served:
		cancel()
		t.Fatalf("serve: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("serve did not listen")
	}
	evt := fmt.Sprintf("evt_values_%x", id)
	body := fmt.Appendf(nil, `{"id":%q,"object":"event","type":"invoice.paid","data":{"object":{}}}`, evt)
	want, forwards := http.StatusCreated, 1
	if int64(len(body)) > cfg.MaxBodyBytes {
		want, forwards = http.StatusRequestEntityTooLarge, 0
	}
	for i, replayed := range []string{"", "true"} {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhooks/stripe", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Stripe-Signature", stripeSignature(t, testSecret, time.Now(), body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "delivery %d: %s", i+1, got)
		if forwards > 0 {
			require.Equal(t, replayed, resp.Header.Get("Idempotent-Replayed"), "delivery %d", i+1)
		}
	}
	require.Equal(t, forwards, c.count("stripe:"+evt), "forwarded once")
	cancel()
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if forwards == 0 {
		return
	}
	// What the store keeps is as long as the retention says: a time past
	// what it can hold would be pruned at once, and the event forwarded
	// again.
	opts := storeOptions(cfg, nil)
	opts.PruneInterval = -1
	store, err := lmdb.Open(cfg.DataDir, opts)
	require.NoError(t, err)
	defer store.Close()
	rec, err := store.Get(context.Background(), "stripe:"+evt)
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, rec.State)
	kept := time.Until(rec.ExpiresAt)
	require.Greater(t, kept, cfg.Retention-time.Minute, "expires at %s", rec.ExpiresAt)
	require.LessOrEqual(t, kept, cfg.Retention, "expires at %s", rec.ExpiresAt)
	// And a claim holds its key for the lease, not a time that wrapped
	// into the past (a second delivery would take it over).
	_, _, err = store.Claim(context.Background(), "stripe:evt_values_claim", "fp", nil)
	require.NoError(t, err)
	rec, err = store.Get(context.Background(), "stripe:evt_values_claim")
	require.NoError(t, err)
	held := time.Until(rec.LeaseUntil)
	require.Greater(t, held, cfg.Lease-time.Minute, "leased until %s", rec.LeaseUntil)
	require.LessOrEqual(t, held, cfg.Lease, "leased until %s", rec.LeaseUntil)
}

// TestLargestBodyLimitEndToEnd: serve, as its own process, with
// WEBHOOKD_MAX_BODY_BYTES=9223372036854775807 answers a delivery normally
// (limit+1 overflowing would panic every POST into a 500).
func TestLargestBodyLimitEndToEnd(t *testing.T) {
	c := newCore(t)
	srv := startServe(t, map[string]string{
		"WEBHOOKD_DATA_DIR":       t.TempDir(),
		"WEBHOOKD_DOWNSTREAM_URL": c.URL,
		"WEBHOOKD_STRIPE_SECRETS": testSecret,
		"WEBHOOKD_MAX_BODY_BYTES": strconv.FormatInt(math.MaxInt64, 10),
	})
	body := []byte(`{"id":"evt_largest_limit","object":"event","type":"invoice.paid","data":{"object":{}}}`)
	req, err := http.NewRequest(http.MethodPost, srv.url+"/webhooks/stripe", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", stripeSignature(t, testSecret, time.Now(), body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s\nlog:\n%s", got, srv.logs())
	require.Equal(t, 1, c.count("stripe:evt_largest_limit"))
	require.NotContains(t, srv.logs(), "panic")
}
