package metrics

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/webhookd/webhookd/dedupe"
)

// Store health at scrape time: whether the store can be written
// (webhookd_store_up) and how full the LMDB map is
// (webhookd_store_map_*), the figures the store alerts of
// deploy/alerts.yml read.

// pingTimeout bounds the probe of one scrape; a store slower than this is
// as good as down for deliveries, whose store calls have
// WEBHOOKD_STORE_TIMEOUT (at most 5 s by default).
const pingTimeout = 5 * time.Second

var (
	storeUpDesc = prometheus.NewDesc("webhookd_store_up",
		"1 when the dedupe store could be read and durably written at the last scrape (the /readyz probe), 0 otherwise.", nil, nil)
	mapUsedDesc = prometheus.NewDesc("webhookd_store_map_used_bytes",
		"LMDB: bytes up to the last page the data file has used (its high-water mark; freed pages below it are reused first).", nil, nil)
	mapSizeDesc = prometheus.NewDesc("webhookd_store_map_size_bytes",
		"LMDB: the current map size (grows by doubling on demand).", nil, nil)
	mapMaxDesc = prometheus.NewDesc("webhookd_store_map_max_bytes",
		"LMDB: the largest the map may grow (its maximum map size setting); writes past it fail.", nil, nil)
)

// WatchReady registers webhookd_store_up, which runs ping (the store's
// Ping, what /readyz answers from) once per scrape. Concurrent scrapes
// share one probe.
func (m *Metrics) WatchReady(ping func(context.Context) error) error {
	if err := m.reg.Register(&upCollector{ping: ping, log: m}); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

type upCollector struct {
	ping func(context.Context) error
	log  *Metrics
	mu   sync.Mutex
}

func (c *upCollector) Describe(ch chan<- *prometheus.Desc) { ch <- storeUpDesc }

func (c *upCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	up := 1.0
	if err := c.ping(ctx); err != nil {
		up = 0
		c.log.log.Warn("metrics: the store failed its probe", "error", err.Error())
	}
	ch <- prometheus.MustNewConstMetric(storeUpDesc, prometheus.GaugeValue, up)
}

// MapReporter is what WatchMap needs of an LMDB store (dedupe/lmdb's
// Store), without linking it.
type MapReporter interface {
	MapUsage() (dedupe.MapUsage, error)
}

// WatchMap registers webhookd_store_map_used_bytes, _size_bytes and
// _max_bytes, read from s at scrape time. Only an LMDB store has a map;
// the tiered store's local LMDB is a cache of Postgres and is not
// reported.
func (m *Metrics) WatchMap(s MapReporter) error {
	if err := m.reg.Register(mapCollector{s}); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

type mapCollector struct{ s MapReporter }

func (c mapCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- mapUsedDesc
	ch <- mapSizeDesc
	ch <- mapMaxDesc
}

func (c mapCollector) Collect(ch chan<- prometheus.Metric) {
	u, err := c.s.MapUsage()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(mapUsedDesc, fmt.Errorf("reading the map's use: %w", err))
		return
	}
	ch <- prometheus.MustNewConstMetric(mapUsedDesc, prometheus.GaugeValue, float64(u.Used))
	ch <- prometheus.MustNewConstMetric(mapSizeDesc, prometheus.GaugeValue, float64(u.Size))
	ch <- prometheus.MustNewConstMetric(mapMaxDesc, prometheus.GaugeValue, float64(u.Max))
}
