package pgtest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder is a skipper that records what dsn decided instead of ending
// the test.
type recorder struct{ fatal, skip string }

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.fatal = args[0].(string) }
func (r *recorder) Skip(args ...any)  { r.skip = args[0].(string) }

// TestDSNRefusesToSkipInCI: a plain go test skips the Postgres tests
// without a database, but CI fails them, since a skipped package still
// prints ok.
func TestDSNRefusesToSkipInCI(t *testing.T) {
	for _, tc := range []struct {
		name        string
		env         map[string]string
		want        string
		fatal, skip bool
	}{
		{name: "set", env: map[string]string{"WEBHOOKD_TEST_POSTGRES_DSN": "postgres://x", "CI": "true"}, want: "postgres://x"},
		{name: "unset, developer", env: map[string]string{}, skip: true},
		{name: "unset, CI", env: map[string]string{"CI": "true"}, fatal: true},
		{name: "unset, CI not true", env: map[string]string{"CI": "false"}, skip: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r recorder
			got := dsn(&r, func(k string) string { return tc.env[k] })
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.fatal, r.fatal != "", r.fatal)
			require.Equal(t, tc.skip, r.skip != "", r.skip)
			if tc.fatal {
				require.Contains(t, r.fatal, "WEBHOOKD_TEST_POSTGRES_DSN")
			}
		})
	}
}
