package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// TestRefusalsHaveOneShape: every provider, Go adapter or spec, words a
// refusal alike, the class first and then its own name ("delivery not
// authenticated: stripe: ..."), so that a log line reads the same
// whichever kind of provider wrote it.
func TestRefusalsHaveOneShape(t *testing.T) {
	environ := []string{"WEBHOOKD_DOWNSTREAM_URL=http://127.0.0.1:9/"}
	for _, e := range providerTable() {
		for _, v := range envVars(e.Settings()) {
			if testValue(v) != "" {
				environ = append(environ, v.key+"="+testValue(v))
			}
		}
	}
	cfg, err := loadConfigFrom(environ)
	require.NoError(t, err)
	reg, err := buildRegistry(cfg)
	require.NoError(t, err)
	require.Len(t, reg.Names(), len(providerTable()), "every provider enabled")
	for _, name := range reg.Names() {
		t.Run(name, func(t *testing.T) {
			p, _ := reg.Lookup(name)
			d := providers.Delivery{Header: http.Header{"Content-Type": {"application/json"}}, Query: url.Values{}, Body: []byte(`{"id":"evt_1"}`)}
			err := p.Verify(context.Background(), d)
			require.Error(t, err)
			class := providers.ErrUnauthorized
			if errors.Is(err, providers.ErrMalformed) { // duitku: a JSON body is not its form
				class = providers.ErrMalformed
			}
			require.ErrorIs(t, err, class)
			require.True(t, strings.HasPrefix(err.Error(), class.Error()+": "+name+": "), err.Error())
		})
	}
}
