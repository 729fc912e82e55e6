package metrics_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/metrics"
	"github.com/webhookd/webhookd/receiver"
)

type fixedStats map[dedupe.State]int

func (f fixedStats) Stats(context.Context) (map[dedupe.State]int, error) { return f, nil }

type fixedMap dedupe.MapUsage

func (f fixedMap) MapUsage() (dedupe.MapUsage, error) { return dedupe.MapUsage(f), nil }

// exposedNames gathers every metric name serve's registry exposes, with
// the _bucket, _sum and _count series of histograms.
func exposedNames(t *testing.T) []string {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{Providers: []string{"stripe"}})
	require.NoError(t, err)
	require.NoError(t, m.WatchStore(fixedStats{dedupe.Failed: 1}))
	require.NoError(t, m.WatchReady(func(context.Context) error { return nil }))
	require.NoError(t, m.WatchMap(fixedMap{Used: 1, Size: 2, Max: 4}))
	require.NoError(t, m.WatchQueues(fixedQueue{}, []metrics.Destination{{Name: "ledger", Queue: true, MaxAge: time.Hour}}))
	require.NoError(t, m.WatchLoad(fakeLoad{}))
	_, err = m.WatchAttempts([]string{"ledger"})
	require.NoError(t, err)
	families, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			names = append(names, f.GetName()+"_bucket", f.GetName()+"_sum", f.GetName()+"_count")
		case dto.MetricType_SUMMARY:
			names = append(names, f.GetName()+"_sum", f.GetName()+"_count")
		}
	}
	return names
}

// TestDeployUsesOnlyExposedNames checks every webhookd_* name in deploy/
// (the alert rules and the Grafana dashboard) against the registry, so
// that a renamed metric cannot leave a rule that never fires.
func TestDeployUsesOnlyExposedNames(t *testing.T) {
	exposed := exposedNames(t)
	var files []string
	err := filepath.WalkDir(filepath.Join("..", "deploy"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	name := regexp.MustCompile(`webhookd_[a-z0-9_]+`)
	used := 0
	for _, path := range files {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, n := range name.FindAllString(string(b), -1) {
			used++
			require.True(t, slices.Contains(exposed, n), "%s uses %s, which webhookd does not expose", filepath.Base(path), n)
		}
	}
	require.Greater(t, used, 20)

	// Each figure the alerts are about is there.
	for _, n := range []string{"webhookd_dependency_failures_total", "webhookd_store_up", "webhookd_store_map_used_bytes",
		"webhookd_store_map_max_bytes", "webhookd_store_records", "webhookd_deliveries_total",
		"webhookd_queue_depth", "webhookd_queue_oldest_seconds", "webhookd_queue_max_age_seconds", "webhookd_destination_paused",
		"webhookd_delivery_attempts_total"} {
		require.Contains(t, exposed, n)
	}
}

func TestDependencyFailuresCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{Providers: []string{"paypal"}})
	require.NoError(t, err)
	for _, dep := range []string{receiver.DependencyProviderAPI, receiver.DependencyProviderAPI, receiver.DependencyStore, ""} {
		m.ObserveDelivery(receiver.Delivery{Provider: "paypal", Outcome: receiver.OutcomeUnavailable, Status: 503, Failed: dep})
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "webhookd_dependency_failures_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["provider"]+"/"+labels["dependency"]] = s.GetCounter().GetValue()
		}
	}
	require.Equal(t, map[string]float64{
		"paypal/core": 0, "paypal/store": 1, "paypal/provider_api": 2,
		"unknown/core": 0, "unknown/store": 0, "unknown/provider_api": 0,
	}, got)
}

// TestRunbooksLinkTheirSection: each alert's runbook annotation links the
// docs section that explains it, and that section exists (a heading whose
// GitHub anchor is the link's).
func TestRunbooksLinkTheirSection(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join("..", "deploy", "alerts.yml"))
	require.NoError(t, err)
	alerts := regexp.MustCompile(`(?m)^\s*- alert: (\S+)`).FindAllStringSubmatch(string(rules), -1)
	runbooks := regexp.MustCompile(`(?m)^\s*runbook: (\S+)`).FindAllStringSubmatch(string(rules), -1)
	require.NotEmpty(t, alerts)
	require.Len(t, runbooks, len(alerts), "every alert has a runbook")
	heading := regexp.MustCompile(`(?m)^#+ (.+)$`)
	for i, a := range alerts {
		file, anchor, ok := strings.Cut(runbooks[i][1], "#")
		require.True(t, ok, "%s: the runbook %s names no section", a[1], runbooks[i][1])
		require.Equal(t, strings.ToLower(a[1]), anchor, "%s links its own section", a[1])
		doc, err := os.ReadFile(filepath.Join("..", file))
		require.NoError(t, err, a[1])
		var anchors []string
		for _, h := range heading.FindAllStringSubmatch(string(doc), -1) {
			anchors = append(anchors, githubAnchor(h[1]))
		}
		require.Contains(t, anchors, anchor, "%s: %s has no section #%s", a[1], file, anchor)
	}
}

// githubAnchor is the id GitHub gives a heading: lower case, spaces to
// hyphens, punctuation but hyphens and underscores dropped.
func githubAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
