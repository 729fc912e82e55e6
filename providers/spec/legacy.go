package spec

import (
	"context"
	"fmt"
	"net/http"

	"github.com/webhookd/webhookd/providers"
)

// legacyAdapter serves a Provider through the receiver's adapter
// interfaces of header and body (providers.Provider, HeaderParser,
// Signer); legacyBatch adds Batcher and Acknowledger for a spec with a
// batch. They carry no query: a spec that signs a query value verifies
// only through Provider itself.
type legacyAdapter struct{ p *Provider }

type legacyBatch struct{ legacyAdapter }

func legacy(p *Provider) providers.Provider {
	if p.s.batch != "" {
		return legacyBatch{legacyAdapter{p}}
	}
	return legacyAdapter{p}
}

func (a legacyAdapter) Name() string { return a.p.Name() }

func (a legacyAdapter) Verify(h http.Header, body []byte) error {
	return a.p.Verify(context.Background(), Delivery{Header: h, Body: body})
}

func (a legacyAdapter) Parse(body []byte) (providers.Event, error) {
	return a.ParseHeader(http.Header{}, body)
}

func (a legacyAdapter) ParseHeader(h http.Header, body []byte) (providers.Event, error) {
	items, err := a.p.Parse(Delivery{Header: h, Body: body})
	if err != nil {
		return providers.Event{}, err
	}
	if len(items) != 1 {
		return providers.Event{}, fmt.Errorf("%w: %d events in one request", providers.ErrMalformed, len(items))
	}
	return items[0].Event, nil
}

func (a legacyAdapter) Sign(body []byte) ([]byte, http.Header, error) {
	d, err := a.p.Sign(body)
	return d.Body, d.Header, err
}

func (a legacyBatch) Split(h http.Header, body []byte) ([]providers.Item, error) {
	items, err := a.p.Parse(Delivery{Header: h, Body: body})
	out := make([]providers.Item, len(items))
	for i, it := range items {
		out[i] = providers.Item{Event: it.Event, Body: it.Body}
	}
	return out, err
}

func (a legacyBatch) Acknowledgement() providers.Acknowledgement { return *a.p.Ack() }
