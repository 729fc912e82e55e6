package receiver_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dedupe/tiered"
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/receiver"
)

const (
	merchantAKey = "SB-Mid-server-merchant-a"
	merchantBKey = "SB-Mid-server-merchant-b"
)

// e2eFile is the file: two Stripe accounts, two Midtrans merchants
// (their status checks pointed at a local stand-in) and three
// destinations.
const e2eFile = `sources:
  - {name: stripe-eu, provider: stripe, settings: {secrets: "${EU_SECRET}"}}
  - {name: stripe-us, provider: stripe, settings: {secrets: "${US_SECRET}"}}
  - {name: midtrans-a, provider: midtrans, settings: {server_key: "${A_KEY}", api_url: "${STATUS_API}"}}
  - {name: midtrans-b, provider: midtrans, settings: {server_key: "${B_KEY}", api_url: "${STATUS_API}"}}
destinations:
  - {name: billing, url: "${BILLING_URL}"}
  - {name: ledger, url: "${LEDGER_URL}"}
  - {name: fulfilment, url: "${FULFILMENT_URL}"}
routes:
  - {source: stripe-eu, types: ["invoice.*"], where: {data.object.currency: eur}, to: [billing, ledger]}
  - {source: "*", types: [charge.refunded], to: [ledger]}
  - {source: midtrans-a, to: [fulfilment]}
  - {source: midtrans-b, to: [fulfilment, ledger]}
  - {source: stripe-us, to: [billing]}
`

// TestRoutingEndToEnd routes each event where e2eFile says, on each store.
func TestRoutingEndToEnd(t *testing.T) {
	openLocal := func(t *testing.T) *lmdb.Store {
		s, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, NoSync: true})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	// Each is the store of every node: the second round of deliveries goes
	// to the last node.
	stores := map[string]func(t *testing.T) []receiver.Store{
		"lmdb": func(t *testing.T) []receiver.Store { return []receiver.Store{openLocal(t)} },
		"postgres": func(t *testing.T) []receiver.Store {
			dsn, schema := pgSchema(t)
			return []receiver.Store{openPG(t, dsn, schema)}
		},
		"tiered": func(t *testing.T) []receiver.Store {
			dsn, schema := pgSchema(t)
			return []receiver.Store{tiered.New(openLocal(t), openPG(t, dsn, schema))}
		},
		"two nodes on postgres": func(t *testing.T) []receiver.Store {
			dsn, schema := pgSchema(t)
			return []receiver.Store{openPG(t, dsn, schema), openPG(t, dsn, schema)}
		},
		"two tiered nodes": func(t *testing.T) []receiver.Store {
			dsn, schema := pgSchema(t)
			return []receiver.Store{tiered.New(openLocal(t), openPG(t, dsn, schema)), tiered.New(openLocal(t), openPG(t, dsn, schema))}
		},
	}
	for _, name := range []string{"lmdb", "postgres", "tiered", "two nodes on postgres", "two tiered nodes"} {
		t.Run(name, func(t *testing.T) { routingEndToEnd(t, stores[name](t)) })
	}
}

func routingEndToEnd(t *testing.T, stores []receiver.Store) {
	down := map[string]*downstream{"billing": newDownstream(t), "ledger": newDownstream(t), "fulfilment": newDownstream(t)}
	settlement := fixture(t, "midtrans", "bank_transfer_settlement.json")
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status_code":"200","transaction_id":"6f1c2b7e-3a41-4d8e-9b1a-0c2d3e4f5a61","order_id":"WH-ORDER-2041",`+
			`"gross_amount":"249000.00","transaction_status":"settlement","fraud_status":"accept"}`)
	}))
	t.Cleanup(api.Close)
	c := loadRoutes(t, e2eFile, map[string]string{"EU_SECRET": euSecret, "US_SECRET": usSecret, "A_KEY": merchantAKey, "B_KEY": merchantBKey,
		"STATUS_API": api.URL, "BILLING_URL": down["billing"].URL, "LEDGER_URL": down["ledger"].URL, "FULFILMENT_URL": down["fulfilment"].URL})
	rt, err := receiver.NewRoutes(c, forwarders(t, c))
	require.NoError(t, err)
	var nodes []*routed
	for _, store := range stores {
		handler, err := receiver.New(receiver.Config{Routing: func() *receiver.Routes { return rt }, Store: store, MaxBodyBytes: 1 << 16})
		require.NoError(t, err)
		srv := httptest.NewServer(handler)
		t.Cleanup(srv.Close)
		nodes = append(nodes, &routed{t: t, srv: srv})
	}
	h := nodes[0]
	midtransPost := func(source, key string) reply {
		a, err := midtrans.New(key)
		require.NoError(t, err)
		signed, err := a.Sign(settlement)
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/webhooks/"+source, bytes.NewReader(signed.Body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return reply{resp.StatusCode, resp.Header, string(b)}
	}
	refund := []byte(`{"id":"evt_refund","object":"event","type":"charge.refunded","data":{"object":{"currency":"usd"}}}`)
	const mtKey = "6f1c2b7e-3a41-4d8e-9b1a-0c2d3e4f5a61:settlement:accept"

	for round := range 2 { // the second: every answer replayed, nothing forwarded
		replayed := ""
		if round == 1 {
			replayed = "true"
			h = nodes[len(nodes)-1]
		}
		for _, tc := range []struct {
			name   string
			send   func() reply
			status int
		}{
			{"EU euro invoice: billing and ledger", func() reply { return h.post("stripe-eu", euSecret, invoice("evt_inv", "eur")) }, 200},
			{"EU dollar invoice: no route", func() reply { return h.post("stripe-eu", euSecret, invoice("evt_usd", "usd")) }, 200},
			{"US invoice: billing, the core's answer", func() reply { return h.post("stripe-us", usSecret, invoice("evt_inv", "eur")) }, 201},
			{"US refund: ledger and billing", func() reply { return h.post("stripe-us", usSecret, refund) }, 200},
			{"merchant A: fulfilment, the core's answer", func() reply { return midtransPost("midtrans-a", merchantAKey) }, 201},
			{"merchant B, the same order id: fulfilment and ledger", func() reply { return midtransPost("midtrans-b", merchantBKey) }, 200},
		} {
			r := tc.send()
			require.Equal(t, tc.status, r.status, "%s (round %d): %s", tc.name, round, r.body)
			if tc.name != "EU dollar invoice: no route" {
				require.Equal(t, replayed, r.header.Get("Idempotent-Replayed"), "%s (round %d)", tc.name, round)
			}
		}
	}
	require.Equal(t, http.StatusUnauthorized, midtransPost("midtrans-a", merchantBKey).status, "signed by merchant B, sent to A")
	require.Equal(t, http.StatusUnauthorized, h.post("stripe-eu", usSecret, invoice("evt_x", "eur")).status)

	got := func(dest string) []string {
		d := down[dest]
		d.mu.Lock()
		defer d.mu.Unlock()
		var out []string
		for _, r := range d.got {
			require.Equal(t, r.Header.Get("Webhook-Source")+":", r.Header.Get("Idempotency-Key")[:len(r.Header.Get("Webhook-Source"))+1])
			out = append(out, r.Header.Get("Idempotency-Key"))
		}
		slices.Sort(out)
		return out
	}
	require.Equal(t, []string{"stripe-eu:evt_inv", "stripe-us:evt_inv", "stripe-us:evt_refund"}, got("billing"))
	require.Equal(t, []string{"midtrans-b:" + mtKey, "stripe-eu:evt_inv", "stripe-us:evt_refund"}, got("ledger"))
	require.Equal(t, []string{"midtrans-a:" + mtKey, "midtrans-b:" + mtKey}, got("fulfilment"),
		"two merchants' events of one order id are two events, each forwarded once")
	for _, d := range down {
		d.mu.Lock()
		for _, r := range d.got {
			require.True(t, strings.HasPrefix(r.Header.Get("Webhook-Provider"), "stripe") || r.Header.Get("Webhook-Provider") == "midtrans")
		}
		d.mu.Unlock()
	}
}
