package routing

import (
	"net/http"
	"path"
	"slices"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
)

// Config is one loaded configuration: its sources, destinations and
// routes. It is never modified after Load or FromEnv returns it.
type Config struct {
	// File is the file it was loaded from; "" for FromEnv's.
	File string
	// Sources in the file's order.
	Sources []*Source
	// Destinations in the file's order.
	Destinations []*Destination
	// Routes in the file's order.
	Routes []Route
	// Warnings are what serve logs at start and after a reload: secrets in
	// clear in a file others can read, variables the file ignores, and the
	// providers' own warnings (providers.Warner). They never quote a value.
	Warnings []string

	sources      map[string]*Source
	destinations map[string]*Destination
}

// Source is one named instance of a provider.
type Source struct {
	// Name is the route segment (/webhooks/<name>) and the key scope
	// (<name>:<event-key>).
	Name string
	// Entry is the provider's line in the provider table.
	Entry providers.Entry
	// Provider is the adapter built from the source's settings.
	Provider providers.Provider
	// Settings are the source's filled settings.
	Settings providers.Settings
	// Variables are the environment variables its settings read through
	// ${...} (names only).
	Variables []string
	// where names a tagged variable as the file's setting, with its line,
	// for the provider's errors (providers.Env.Var).
	where func(tagged string) string
}

// Delivery is how a destination receives events.
type Delivery string

// The deliveries a destination may name.
const (
	// Sync forwards while the gateway waits, as webhookd always has.
	Sync Delivery = "sync"
	// Queue stores the event for the destination and acknowledges the
	// gateway; webhookd delivers it itself (docs/contract.md, "Store and
	// forward"). Load refuses it until that is built.
	Queue Delivery = "queue"
)

// Destination is a core service that events are forwarded to.
type Destination struct {
	// Name is unique in a Config; DefaultDestination's records keep the
	// keys of before destinations existed (dedupe.Key).
	Name string
	URL  string
	// Delivery is Sync or Queue.
	Delivery Delivery
	// Timeout is a sync forward's whole budget (a queue attempt's, for
	// queue), Retries the retries within it (sync only).
	Timeout time.Duration
	Retries int
	// FailedPolicy is "replay" or "retry" (WEBHOOKD_FAILED_POLICY's values).
	FailedPolicy string
	// Headers are sent with every forward to it.
	Headers http.Header
	// MaxAge, Rate and Concurrency bound a queue destination's attempts
	// (docs/contract.md, "Store and forward"); zero Rate is no limit.
	MaxAge      time.Duration
	Rate        float64
	Concurrency int
	// Variables are the environment variables its values read.
	Variables []string
}

// Route sends the events of a source (or of every source, "*") that
// match its types and conditions to its destinations.
type Route struct {
	Source string
	// Types are globs (path.Match) on the event type; none matches every
	// type.
	Types []string
	// Where are equalities on fields of the signed body, all required.
	Where []Condition
	// To names the destinations, each once.
	To []string
}

// Condition is one equality of a route's where: the text of the body's
// field at Path (providers.BodyFields) equals Value.
type Condition struct {
	Path, Value string
}

// AnySource is the Route.Source that reaches every source.
const AnySource = "*"

// DefaultDestination is the one destination FromEnv makes.
const DefaultDestination = dedupe.DefaultDestination

// Source returns the source called name.
func (c *Config) Source(name string) (*Source, bool) {
	s, ok := c.sources[name]
	return s, ok
}

// Destination returns the destination called name.
func (c *Config) Destination(name string) (*Destination, bool) {
	d, ok := c.destinations[name]
	return d, ok
}

// ProviderOf names the provider of the source called name; "" when there
// is none.
func (c *Config) ProviderOf(name string) string {
	if s, ok := c.sources[name]; ok {
		return s.Entry.Name
	}
	return ""
}

// Route returns the destinations an event of src with type typ and body
// fields goes to, each once, in the order the routes name them; none when
// no route matches (the event is unrouted). fields is read only when a
// matching route has a where.
func (c *Config) Route(src *Source, typ string, fields *providers.BodyFields) []*Destination {
	return c.AppendRoute(nil, src, typ, fields)
}

// AppendRoute appends Route's destinations to out: a caller that passes
// a slice of its own stack allocates nothing for them.
func (c *Config) AppendRoute(out []*Destination, src *Source, typ string, fields *providers.BodyFields) []*Destination {
	start := len(out)
	for i := range c.Routes {
		r := &c.Routes[i]
		if !r.matches(src.Name, typ, fields) {
			continue
		}
	to:
		for _, name := range r.To {
			d := c.destinations[name]
			for _, have := range out[start:] {
				if have == d {
					continue to
				}
			}
			out = append(out, d)
		}
	}
	return out
}

func (r *Route) matches(source, typ string, fields *providers.BodyFields) bool {
	if r.Source != AnySource && r.Source != source {
		return false
	}
	if len(r.Types) > 0 {
		ok := false
		for _, g := range r.Types {
			if m, _ := path.Match(g, typ); m {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for _, c := range r.Where {
		v, ok := fields.Lookup(c.Path)
		if !ok || v != c.Value {
			return false
		}
	}
	return true
}

// index builds the lookups of a Config whose lists are complete.
func (c *Config) index() {
	c.sources = make(map[string]*Source, len(c.Sources))
	for _, s := range c.Sources {
		c.sources[s.Name] = s
	}
	c.destinations = make(map[string]*Destination, len(c.Destinations))
	for _, d := range c.Destinations {
		c.destinations[d.Name] = d
	}
}

// DestinationsOf names the destinations that events of src can reach
// (by any of its routes), each once, in the routes' order.
func (c *Config) DestinationsOf(src *Source) []string {
	var out []string
	for _, r := range c.Routes {
		if r.Source != AnySource && r.Source != src.Name {
			continue
		}
		for _, name := range r.To {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}
