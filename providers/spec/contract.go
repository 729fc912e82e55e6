package spec

import (
	"net/http"
	"net/url"

	"github.com/webhookd/webhookd/providers"
)

// Delivery is one request to a provider route, exactly as it arrived: the
// provider contract's delivery, declared here until package providers has
// it.
type Delivery struct {
	Header http.Header
	Query  url.Values
	Body   []byte
}

// Item is one event of a delivery and the body the core service receives
// for it.
type Item struct {
	providers.Event
	Body []byte
}
