package providers

import (
	"fmt"
	"sort"
)

// Registry holds the configured adapters by name. The zero value is empty and
// ready to use; it is not safe for concurrent Register calls, since it is
// filled once at start-up and only read afterwards.
type Registry struct {
	byName map[string]Provider
}

// Register adds p. A second adapter with the same name is an error, so that a
// wiring mistake fails loudly at start-up instead of shadowing an adapter.
func (r *Registry) Register(p Provider) error {
	name := p.Name()
	if name == "" {
		return fmt.Errorf("providers: adapter %T has an empty name", p)
	}
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("providers: %q registered twice", name)
	}
	if r.byName == nil {
		r.byName = make(map[string]Provider)
	}
	r.byName[name] = p
	return nil
}

// Lookup returns the adapter registered under name.
func (r *Registry) Lookup(name string) (Provider, bool) {
	p, ok := r.byName[name]
	return p, ok
}

// Names lists the registered adapters in sorted order.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
