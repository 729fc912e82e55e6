package routing

import (
	"net/http"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// EnvSource is a provider enabled by its variables: FromEnv makes it a
// source named after it.
type EnvSource struct {
	Entry    providers.Entry
	Settings providers.Settings
	Provider providers.Provider
}

// FromEnv is the configuration of the environment alone: one source per
// enabled provider, named after it, and one sync destination,
// DefaultDestination, that every event goes to. Its keys, routes and
// answers are those of before sources existed. dest's URL is the
// caller's to check (WEBHOOKD_DOWNSTREAM_URL).
func FromEnv(sources []EnvSource, dest Destination) (*Config, error) {
	dest.Name, dest.Delivery = DefaultDestination, Sync
	if dest.Headers == nil {
		dest.Headers = http.Header{}
	}
	c := &Config{Destinations: []*Destination{&dest}}
	for _, s := range sources {
		c.Sources = append(c.Sources, &Source{Name: s.Entry.Name, Entry: s.Entry, Provider: s.Provider, Settings: s.Settings})
	}
	c.Routes = []Route{{Source: AnySource, To: []string{DefaultDestination}}}
	c.index()
	return c, nil
}

// DestinationDefaults are the variables a destination's unset values take.
type DestinationDefaults struct {
	Timeout      time.Duration // WEBHOOKD_DISPATCH_TIMEOUT
	Retries      int           // WEBHOOKD_DISPATCH_RETRIES
	FailedPolicy string        // WEBHOOKD_FAILED_POLICY
}
