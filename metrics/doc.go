// Package metrics exposes webhookd's Prometheus metrics at /metrics.
//
// Metrics are registered on a prometheus.Registry the caller passes in, and
// fed by observer functions the caller wires into the packages it observes:
// ObserveDelivery is the receiver's OnDelivery hook, ObserveCommit and
// ObservePrune are the dedupe store's OnCommit and OnPrune hooks, and
// WatchStore counts records by state when Prometheus scrapes. Those packages
// never import this one, nor Prometheus.
//
// Every metric webhookd defines is named webhookd_*; the Go runtime and
// process collectors add the usual go_* and process_* metrics, and the
// handler its promhttp_* counters.
//
// This package must never use the default registry or any other global
// state, and must never put an unbounded or sensitive value in a label: no
// event key, no URL, no body, no secret, no error text. Labels take only
// values from fixed sets, and a provider name that is not configured is
// counted as "unknown", so no client can create new series by calling
// made-up routes. Observers only touch in-memory counters, so they never
// slow down the request or the store commit they observe.
package metrics
