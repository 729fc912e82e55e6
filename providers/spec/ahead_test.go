package spec

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// TestTimestampCenturiesAhead: a timestamp further ahead of the clock than
// a time.Duration holds (292 years) is refused like one just past the
// tolerance, or the retention, instead of passing because the negated age
// saturates: a unix timestamp under a tolerance both ways (Paddle's), and
// an RFC 3339 one bounded by the retention (SNAP's).
func TestTimestampCenturiesAhead(t *testing.T) {
	builtin, err := Builtin()
	require.NoError(t, err)
	byName := map[string]*Spec{}
	for _, s := range builtin {
		byName[s.name] = s
	}

	now := time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)
	// centuries stands for 300 years ahead, which no time.Duration holds.
	const centuries = -1
	for _, tc := range []struct {
		spec  string
		ahead time.Duration
		want  string
	}{
		{"paddle", time.Minute, ""},
		{"paddle", 6 * time.Minute, providers.ReasonTimestamp},
		{"paddle", centuries, providers.ReasonTimestamp},
		{"snap", time.Minute, ""},
		{"snap", centuries, providers.ReasonTimestamp},
	} {
		s := byName[tc.spec]
		require.NotNil(t, s, tc.spec)
		secret := secretFor(s, "ahead")
		settings := s.examples[0].settings
		ahead := now.Add(tc.ahead)
		if tc.ahead == centuries {
			ahead = now.AddDate(300, 0, 0)
		}
		signer, err := newTest(s, []string{secret}, settings, func() time.Time { return ahead })
		require.NoError(t, err)
		verifier, err := newTest(s, []string{secret}, settings, func() time.Time { return now }, WithRetention(168*time.Hour))
		require.NoError(t, err)
		d, err := signer.Sign(s.examples[0].body)
		require.NoError(t, err)
		err = verifier.Verify(context.Background(), d)
		if tc.want == "" {
			require.NoError(t, err, "%s %v ahead", tc.spec, tc.ahead)
			continue
		}
		require.Equal(t, tc.want, providers.Reason(err), "%s %v ahead: %v", tc.spec, tc.ahead, err)
	}
}
