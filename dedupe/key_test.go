package dedupe_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

func TestSplitKey(t *testing.T) {
	for _, tc := range []struct {
		key, provider, event string
		ok                   bool
	}{
		{"stripe:evt_1", "stripe", "evt_1", true},
		{"xendit:invoice.paid:inv_1", "xendit", "invoice.paid:inv_1", true},
		{"stripe", "stripe", "", false},
		{"stripe:", "stripe", "", false},
		{":evt_1", "", "evt_1", false},
		{"", "", "", false},
	} {
		p, e, ok := dedupe.SplitKey(tc.key)
		require.Equal(t, []any{tc.provider, tc.event, tc.ok}, []any{p, e, ok}, tc.key)
	}
}
