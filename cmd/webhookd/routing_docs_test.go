package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRoutingDocExample loads docs/routing.md's full example as serve
// would.
func TestRoutingDocExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/routing.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(doc)
	require.NotNil(t, m, "docs/routing.md has a yaml example")
	file := filepath.Join(t.TempDir(), "routes.yaml")
	require.NoError(t, os.WriteFile(file, m[1], 0o600))
	clearEnv(t)
	for _, v := range []string{"STRIPE_EU_SECRETS", "STRIPE_US_SECRET", "STRIPE_US_SECRET_OLD", "BILLING_TOKEN"} {
		t.Setenv(v, "whsec_doc_example_"+strings.ToLower(v))
	}
	t.Setenv("MIDTRANS_A_SERVER_KEY", "SB-Mid-server-a")
	t.Setenv("MIDTRANS_B_SERVER_KEY", "SB-Mid-server-b")
	cfg, err := loadConfigFrom([]string{"WEBHOOKD_CONFIG=" + file})
	require.NoError(t, err)
	c, err := loadRouting(cfg, nil, file, nil)
	require.NoError(t, err)
	require.Len(t, c.Sources, 4)
	require.Len(t, c.Destinations, 3)
	require.Empty(t, c.Warnings)
	a, ok := c.Source("midtrans-store-a")
	require.True(t, ok)
	require.Equal(t, []string{"ledger", "fulfilment", "billing"}, c.DestinationsOf(a))
	eu, _ := c.Source("stripe-eu")
	require.Equal(t, []string{"billing", "ledger"}, c.DestinationsOf(eu))
}

// TestRoutingDocTable holds docs/routing.md's table of what routing may
// read to each provider's declared SignedBody and SignedType.
func TestRoutingDocTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/routing.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| ([a-z0-9, ]+) \\| (allowed|refused[^|]*) \\| (allowed|refused[^|]*) \\|$")
	listed := map[string][2]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		for _, name := range strings.Split(m[1], ", ") {
			listed[name] = [2]bool{m[2] == "allowed", m[3] == "allowed"}
		}
	}
	var names []string
	for _, e := range providerTable() {
		names = append(names, e.Name)
		require.Contains(t, listed, e.Name, "docs/routing.md lists every provider")
		require.Equal(t, listed[e.Name], [2]bool{e.SignedBody, e.SignedType}, e.Name)
	}
	for name := range listed {
		require.True(t, slices.Contains(names, name), "%s is not a provider", name)
	}
}
