package receiver_test

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/adyen"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
)

// End-to-end tests of deliveries that carry several events (docs/contract.md,
// "Batches (Adyen)"): Adyen's notification items and GoCardless's events, on
// the harness of receiver_test.go. cmd/webhookd's provider suite forwards,
// replays and refuses every provider's batch fixtures; these cover what a
// batch answers and retries item by item.

const adyenKey = "44782def547aaa06c910c43932b1eb0c71fc68d9d0c057550c48ec2acf6ba056"

// adyenBatch is the key of each item of fixtures/adyen/batch_of_three.json.
var adyenBatch = []string{
	"adyen:WebhookdShopECOM:WHKD2F7B4C9A1E86:AUTHORISATION:true",
	"adyen:WebhookdShopECOM:WHKD9A5E2D6B3C07:CAPTURE:true",
	"adyen:WebhookdShopECOM:WHKD5C1F8E3A7B98:AUTHORISATION:false",
}

func newAdyen(t *testing.T) *adyen.Adapter {
	a, err := adyen.New([]string{adyenKey})
	require.NoError(t, err)
	return a
}

// deliveries collects OnDelivery's calls.
type deliveries struct {
	mu  sync.Mutex
	all []receiver.Delivery
}

func (d *deliveries) add(x receiver.Delivery) { d.mu.Lock(); d.all = append(d.all, x); d.mu.Unlock() }

func (d *deliveries) take() []receiver.Delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.all
	d.all = nil
	return out
}

func TestAdyenBatchEndToEnd(t *testing.T) {
	a := newAdyen(t)
	var seen deliveries
	h := newHarness(t, withProviders(a), func(h *harness) {
		h.config = func(c *receiver.Config) { c.OnDelivery = seen.add }
	})
	batch := fixture(t, "adyen", "batch_of_three.json")
	items, err := a.Parse(providers.Delivery{Body: batch})
	require.NoError(t, err)

	t.Run("a batch of 3: 3 forwards in order, [accepted]", func(t *testing.T) {
		r := h.signed(a, batch)
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Equal(t, "[accepted]", r.body)
		require.Equal(t, "text/plain; charset=utf-8", r.header.Get("Content-Type"))
		require.Empty(t, r.header.Get("Idempotent-Replayed"))
		keys, types := h.forwarded()
		require.Equal(t, adyenBatch, keys)
		require.Equal(t, []string{"AUTHORISATION", "CAPTURE", "AUTHORISATION"}, types)
		for i := range items {
			require.Equal(t, items[i].Body, h.down.bodies[i], "item %d: a one-item notification, its bytes unchanged", i)
			require.Equal(t, "application/json", h.down.got[i].Header.Get("Content-Type"))
			require.Equal(t, dedupe.Completed, h.state(adyenBatch[i]))
		}
		// One report per item, then the request's own.
		got := seen.take()
		require.Len(t, got, 4)
		for i := range 3 {
			require.Equal(t, adyenBatch[i], got[i].Key)
			require.Equal(t, receiver.OutcomeForwarded, got[i].Outcome)
			require.Equal(t, http.StatusCreated, got[i].Status)
		}
		require.Equal(t, receiver.OutcomeBatch, got[3].Outcome)
		require.Equal(t, 3, got[3].Items)
		require.Equal(t, http.StatusOK, got[3].Status)
	})

	t.Run("the same batch again: nothing forwarded, [accepted]", func(t *testing.T) {
		r := h.signed(a, batch)
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Equal(t, "[accepted]", r.body)
		require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
		require.EqualValues(t, 3, h.down.calls.Load())
		got := seen.take()
		require.Len(t, got, 4)
		for i := range 3 {
			require.Equal(t, receiver.OutcomeReplayed, got[i].Outcome)
		}
	})

	t.Run("a batch with one forged item: 401, nothing stored or forwarded", func(t *testing.T) {
		other := fixture(t, "adyen", "authorisation_success.json")
		sd, err := a.Sign(other)
		signed := sd.Body
		require.NoError(t, err)
		// Two genuine items and, between them, one whose amount was
		// raised after signing.
		genuine, err := a.Parse(providers.Delivery{Body: signed})
		require.NoError(t, err)
		forged := bytes.Replace(items[1].Body, []byte(`"value": 24950`), []byte(`"value": 94950`), 1)
		require.NotEqual(t, items[1].Body, forged)
		body := joinItems(t, genuine[0].Body, forged, fixture(t, "adyen", "refund.json"))
		r := h.send(adyen.Name, body, nil)
		require.Equal(t, http.StatusUnauthorized, r.status, r.body)
		require.EqualValues(t, 3, h.down.calls.Load())
		require.Zero(t, h.state("adyen:WebhookdShopECOM:WHKD4C7A1B2E9F30:AUTHORISATION:true"))
		require.Zero(t, h.state("adyen:WebhookdShopECOM:WHKD6D3A8B1E4F75:REFUND:true"))
		require.Len(t, h.records(), 3, "only the first batch's items")
		got := seen.take()
		require.Len(t, got, 1, "the request's line only")
		require.Equal(t, receiver.OutcomeUnauthorized, got[0].Outcome)
	})
}

// joinItems makes one notification of the items of several.
func joinItems(t *testing.T, bodies ...[]byte) []byte {
	var out []byte
	for _, b := range bodies {
		start := bytes.IndexByte(b, '[')
		end := bytes.LastIndexByte(b, ']')
		require.Positive(t, start)
		if out == nil {
			out = append(out, `{"live":"false","notificationItems":[`...)
		} else {
			out = append(out, ',')
		}
		out = append(out, bytes.TrimSpace(b[start+1:end])...)
	}
	return append(out, "]}"...)
}

func TestAdyenBatchRetryForwardsOnlyUnfinished(t *testing.T) {
	a := newAdyen(t)
	h := newHarness(t, withProviders(a))
	// The core service is down for the capture alone.
	h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Idempotency-Key") == adyenBatch[1] {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	batch := fixture(t, "adyen", "batch_of_three.json")
	r := h.signed(a, batch)
	require.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.Equal(t, dedupe.Completed, h.state(adyenBatch[0]))
	require.Zero(t, h.state(adyenBatch[1]), "released for the retry")
	require.Equal(t, dedupe.Completed, h.state(adyenBatch[2]), "the item after the failed one is forwarded too")
	keys, _ := h.forwarded()
	require.Equal(t, []string{adyenBatch[0], adyenBatch[1], adyenBatch[1], adyenBatch[2]}, keys, "the capture tried twice (one retry)")

	h.down.setHandler(nil)
	r = h.signed(a, batch)
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Equal(t, "[accepted]", r.body)
	require.Empty(t, r.header.Get("Idempotent-Replayed"), "the capture was forwarded now")
	keys, _ = h.forwarded()
	require.Equal(t, []string{adyenBatch[1]}, keys[4:], "the retry forwards only the capture")
	require.Equal(t, dedupe.Completed, h.state(adyenBatch[1]))
}

// TestAdyenBatchAnswers walks the answer rule: the most urgent unfinished
// item answers (503, then 409, then 422); COMPLETED and FAILED items are
// finished.
func TestAdyenBatchAnswers(t *testing.T) {
	a := newAdyen(t)
	batch := fixture(t, "adyen", "batch_of_three.json")
	items, err := a.Parse(providers.Delivery{Body: batch})
	require.NoError(t, err)
	claim := func(h *harness, i int, fp string) {
		_, _, err := h.store.Claim(t.Context(), adyenBatch[i], fp, nil)
		require.NoError(t, err)
	}

	t.Run("core's permanent 4xx is FAILED, so finished: [accepted]", func(t *testing.T) {
		h := newHarness(t, withProviders(a))
		h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Idempotency-Key") == adyenBatch[0] {
				w.WriteHeader(http.StatusUnprocessableEntity)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		r := h.signed(a, batch)
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Equal(t, "[accepted]", r.body)
		require.Equal(t, dedupe.Failed, h.state(adyenBatch[0]))
	})

	t.Run("under policy retry the core's 4xx is not finished: passed through", func(t *testing.T) {
		h := newHarness(t, withProviders(a), func(h *harness) { h.policy = receiver.PolicyRetry })
		h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Idempotency-Key") == adyenBatch[2] {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		r := h.signed(a, batch)
		require.Equal(t, http.StatusBadRequest, r.status, r.body)
		require.Equal(t, receiver.RejectedByCore, r.header.Get(receiver.RejectedByHeader))
		require.Zero(t, h.state(adyenBatch[2]))
	})

	t.Run("IN_FLIGHT elsewhere: 409, the others forwarded", func(t *testing.T) {
		h := newHarness(t, withProviders(a))
		claim(h, 1, items[1].Event.Fingerprint)
		r := h.signed(a, batch)
		require.Equal(t, http.StatusConflict, r.status, r.body)
		require.NotEmpty(t, r.header.Get("Retry-After"))
		keys, _ := h.forwarded()
		require.Equal(t, []string{adyenBatch[0], adyenBatch[2]}, keys)
	})

	t.Run("503 outranks 409 and 422", func(t *testing.T) {
		h := newHarness(t, withProviders(a))
		l, _, err := h.store.Claim(t.Context(), adyenBatch[0], "another payload", nil)
		require.NoError(t, err)
		require.NoError(t, h.store.Complete(t.Context(), l, dedupe.Response{Status: 200}))
		claim(h, 1, items[1].Event.Fingerprint)
		h.down.setHandler(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
		r := h.signed(a, batch)
		require.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
		require.Zero(t, h.state(adyenBatch[2]))
	})

	t.Run("409 outranks 422", func(t *testing.T) {
		h := newHarness(t, withProviders(a))
		l, _, err := h.store.Claim(t.Context(), adyenBatch[0], "another payload", nil)
		require.NoError(t, err)
		require.NoError(t, h.store.Complete(t.Context(), l, dedupe.Response{Status: 200}))
		claim(h, 2, items[2].Event.Fingerprint)
		r := h.signed(a, batch)
		require.Equal(t, http.StatusConflict, r.status, r.body)
		keys, _ := h.forwarded()
		require.Equal(t, []string{adyenBatch[1]}, keys)
	})

	t.Run("a mismatch alone: 422 by webhookd", func(t *testing.T) {
		h := newHarness(t, withProviders(a))
		l, _, err := h.store.Claim(t.Context(), adyenBatch[1], "another payload", nil)
		require.NoError(t, err)
		require.NoError(t, h.store.Complete(t.Context(), l, dedupe.Response{Status: 200}))
		r := h.signed(a, batch)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
		require.Equal(t, receiver.RejectedByWebhookd, r.header.Get(receiver.RejectedByHeader))
	})
}

// TestAdyenBatchTimeBudget: a slow core service cannot make a batch take
// one dispatch budget per item. The request has Config.BatchTimeout in all:
// the forward in flight when it runs out is cut (its key released), the
// items not reached are not claimed, and the answer is 503 so that Adyen
// sends the request again.
func TestAdyenBatchTimeBudget(t *testing.T) {
	// Wide margins: the bound below tells one budget (~budget) from one per
	// item (3 × slow) on a loaded machine.
	const slow, budget = 800 * time.Millisecond, 1200 * time.Millisecond
	a := newAdyen(t)
	var seen deliveries
	h := newHarness(t, withProviders(a), func(h *harness) {
		h.fwdTO = 5 * time.Second
		h.config = func(c *receiver.Config) {
			c.BatchTimeout = budget
			c.OnDelivery = seen.add
		}
	})
	h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(slow):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	})
	start := time.Now()
	r := h.signed(a, fixture(t, "adyen", "batch_of_three.json"))
	took := time.Since(start)
	require.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.Less(t, took, 3*slow, "one budget for the request, not one per item")
	require.Equal(t, dedupe.Completed, h.state(adyenBatch[0]))
	require.Zero(t, h.state(adyenBatch[1]), "cut at the budget: released")
	require.Zero(t, h.state(adyenBatch[2]), "not reached: never claimed")
	keys, _ := h.forwarded()
	require.Equal(t, adyenBatch[:2], keys, "the third item is not forwarded")
	got := seen.take()
	require.Len(t, got, 4)
	for i, want := range []receiver.Outcome{receiver.OutcomeForwarded, receiver.OutcomeUnavailable, receiver.OutcomeUnavailable, receiver.OutcomeBatch} {
		require.Equal(t, want, got[i].Outcome, "delivery %d", i)
	}

	// Adyen's retry: the first item is replayed, the rest forwarded.
	h.down.setHandler(nil)
	r = h.signed(a, fixture(t, "adyen", "batch_of_three.json"))
	require.Equal(t, http.StatusOK, r.status, r.body)
	for _, k := range adyenBatch {
		require.Equal(t, dedupe.Completed, h.state(k))
	}
}

// TestGoCardlessBatchEdges: one genuine request whose batch repeats an
// element forwards it once; an empty batch or one longer than
// spec.MaxBatch is 400 and stores nothing.
func TestGoCardlessBatchEdges(t *testing.T) {
	s := builtinSpec(t, "gocardless")
	const secret = "gc-edges-secret"
	h := newHarness(t, withProviders(buildGateway(t, s, nil, secret)), func(h *harness) {
		h.config = func(c *receiver.Config) { c.MaxBodyBytes = 1 << 20 }
	})
	ev := `{"id":"EV_EDGE_1","resource_type":"payments","action":"confirmed","links":{"payment":"PM1"}}`

	r := h.sendDelivery("gocardless", signedDelivery(t, s, nil, secret, []byte(`{"events":[`+ev+`,`+ev+`]}`)))
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.EqualValues(t, 1, h.down.calls.Load(), "the repeat is replayed, not forwarded")
	require.Equal(t, dedupe.Completed, h.state("gocardless:EV_EDGE_1"))

	recs := len(h.records())
	huge := `{"events":[` + strings.Repeat(`{"id":"E2"},`, spec.MaxBatch) + `{"id":"E3"}]}`
	for name, body := range map[string]string{"empty": `{"events":[]}`, "longer than MaxBatch": huge} {
		r := h.sendDelivery("gocardless", signedDelivery(t, s, nil, secret, []byte(body)))
		require.Equal(t, http.StatusBadRequest, r.status, name)
	}
	require.EqualValues(t, 1, h.down.calls.Load())
	require.Len(t, h.records(), recs)
}
