package metrics

import (
	"sync"
	"sync/atomic"
)

// seriesCache holds the children of one metric vector by their label
// values, so that a delivery does not hash, validate and look up its labels
// in the vector again (GetMetricWithLabelValues: most of what
// ObserveDelivery cost, BENCHMARKS.md "The receiver's own cost per
// delivery"). The values are bounded (configured names, fixed outcomes and
// reasons) and no series is ever deleted, so a child once looked up stays
// its vector's and the cache stays small. Reads take no lock: the map is
// replaced whole, under mu, when a new child is added.
type seriesCache[K comparable, C any] struct {
	mu sync.Mutex
	m  atomic.Pointer[map[K]C]
}

// lookup returns the child of k, if cached.
func (s *seriesCache[K, C]) lookup(k K) (C, bool) {
	if m := s.m.Load(); m != nil {
		c, ok := (*m)[k]
		return c, ok
	}
	var zero C
	return zero, false
}

// get returns the child of k, looking it up with child and caching it the
// first time.
func (s *seriesCache[K, C]) get(k K, child func() C) C {
	c, ok := s.lookup(k)
	if !ok {
		c = child()
		s.store(k, c)
	}
	return c
}

// store caches c as the child of k.
func (s *seriesCache[K, C]) store(k K, c C) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := map[K]C{k: c}
	if m := s.m.Load(); m != nil {
		for k2, c2 := range *m {
			next[k2] = c2
		}
	}
	s.m.Store(&next)
}
