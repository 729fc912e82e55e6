package receiver

import (
	"errors"
	"fmt"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/routing"
)

// Routes is one configuration the receiver serves: the sources,
// destinations and routes (routing.Config) with each destination's
// Forwarder. It is read once per delivery, at its start (Config.Routing),
// and never changed: a reload makes a new one, with NewRoutes.
type Routes struct {
	Config *routing.Config
	// Forwarders holds the Forwarder of every destination, by name.
	Forwarders map[string]Forwarder
	// acks holds the acknowledgement of each source whose provider has
	// one (providers.Acknowledger), by source name, asked once here
	// rather than on every delivery.
	acks map[string]*providers.Acknowledgement
}

// NewRoutes checks that every destination of c has its forwarder.
func NewRoutes(c *routing.Config, forwarders map[string]Forwarder) (*Routes, error) {
	if c == nil {
		return nil, errors.New("receiver: no routing configuration")
	}
	for _, d := range c.Destinations {
		if forwarders[d.Name] == nil {
			return nil, fmt.Errorf("receiver: destination %q has no forwarder", d.Name)
		}
	}
	acks := map[string]*providers.Acknowledgement{}
	for _, src := range c.Sources {
		if ack := providers.AckOf(src.Provider); ack != nil {
			acks[src.Name] = ack
		}
	}
	return &Routes{Config: c, Forwarders: forwarders, acks: acks}, nil
}

// ack is the acknowledgement of the source called name's provider; nil
// when the core service's answer is relayed.
func (r *Routes) ack(name string) *providers.Acknowledgement { return r.acks[name] }

// envRoutes is what Config.Providers and Config.Forwarder serve when
// Config.Routing is nil: each provider a source named after it, every
// event to the one destination, default.
func envRoutes(reg *providers.Registry, fwd Forwarder, policy FailedPolicy) (*Routes, error) {
	var sources []routing.EnvSource
	for _, name := range reg.Names() {
		p, _ := reg.Lookup(name)
		sources = append(sources, routing.EnvSource{Entry: providers.Entry{Name: name}, Provider: p})
	}
	c, err := routing.FromEnv(sources, routing.Destination{FailedPolicy: string(policy)})
	if err != nil {
		return nil, err
	}
	return NewRoutes(c, map[string]Forwarder{routing.DefaultDestination: fwd})
}

// defaultAck is the acknowledgement of a provider that has none of its
// own (no providers.Acknowledger) when its answer cannot be one core service's:
// the event went to several destinations, or to none (unrouted).
var defaultAck = &providers.Acknowledgement{Status: 200, ContentType: "application/json", Body: []byte("{\"received\":true}\n")}
