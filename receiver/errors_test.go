package receiver

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		err    error
		status int
		out    Outcome
		reason string
	}{
		{ErrUnknownProvider, http.StatusNotFound, OutcomeNotFound, "unknown_source"},
		{ErrTooLarge, http.StatusRequestEntityTooLarge, OutcomeTooLarge, "too_large"},
		{fmt.Errorf("%w: bad sig", providers.ErrUnauthorized), http.StatusUnauthorized, OutcomeUnauthorized, "signature_invalid"},
		{fmt.Errorf("%w: none", providers.ErrSignatureMissing), http.StatusUnauthorized, OutcomeUnauthorized, "signature_missing"},
		{fmt.Errorf("%w: old", providers.ErrTimestamp), http.StatusUnauthorized, OutcomeUnauthorized, "timestamp_outside_tolerance"},
		{fmt.Errorf("%w: theirs", providers.ErrAccountNotAllowed), http.StatusUnauthorized, OutcomeUnauthorized, "account_not_allowed"},
		{fmt.Errorf("%w: foreign", providers.ErrCertificateInvalid), http.StatusUnauthorized, OutcomeUnauthorized, "certificate_invalid"},
		{fmt.Errorf("%w: status differs", providers.ErrMismatch), http.StatusUnauthorized, OutcomeUnauthorized, "not_confirmed"},
		{fmt.Errorf("%w: not json", providers.ErrMalformed), http.StatusBadRequest, OutcomeBadRequest, "malformed"},
		{fmt.Errorf("%w: no id", providers.ErrNoEventKey), http.StatusBadRequest, OutcomeBadRequest, "no_event_key"},
		{ErrBadEvent, http.StatusBadRequest, OutcomeBadRequest, "no_event_key"},
		{fmt.Errorf("%w: long", dedupe.ErrInvalidKey), http.StatusBadRequest, OutcomeBadRequest, "no_event_key"},
		{dedupe.ErrFingerprintMismatch, http.StatusUnprocessableEntity, OutcomeMismatch, "payload_mismatch"},
		{dedupe.ErrInFlight, http.StatusConflict, OutcomeConflict, ""},
		{ErrDownstreamUnavailable, http.StatusServiceUnavailable, OutcomeUnavailable, ""},
		{ErrBatchTimeout, http.StatusServiceUnavailable, OutcomeUnavailable, ""},
		{ErrBusy, http.StatusServiceUnavailable, OutcomeUnavailable, ""},
		{fmt.Errorf("%w: disk full", dedupe.ErrUnavailable), http.StatusServiceUnavailable, OutcomeUnavailable, ""},
		{dedupe.ErrClosed, http.StatusServiceUnavailable, OutcomeUnavailable, ""},
		{fmt.Errorf("%w: timeout", providers.ErrUnavailable), http.StatusServiceUnavailable, OutcomeUnavailable, ""},
		{fmt.Errorf("%w: %w", ErrStoreUnavailable, errors.New("deadline")), http.StatusServiceUnavailable, OutcomeUnavailable, ""},
		{errors.New("surprise"), http.StatusInternalServerError, OutcomeError, ""},
	}
	for _, tt := range tests {
		status, out := classify(tt.err)
		require.Equal(t, tt.status, status, tt.err.Error())
		require.Equal(t, tt.out, out, tt.err.Error())
		require.Equal(t, tt.reason, reason(tt.err), tt.err.Error())
		if tt.reason != "" {
			require.Contains(t, Reasons(), tt.reason)
		}
	}
}

// TestPublicMessageHidesStorageDetail: what the store says about its disk,
// files or database stays in the log; a provider reads a fixed message.
func TestPublicMessageHidesStorageDetail(t *testing.T) {
	tests := []struct {
		err    error
		msg    string
		hidden bool
	}{
		{fmt.Errorf("%w: mdb_txn_commit: no space left on device", dedupe.ErrUnavailable), "store unavailable", true},
		{fmt.Errorf("%w: /var/lib/webhookd: closed", dedupe.ErrClosed), "store unavailable", true},
		{fmt.Errorf("%w: %w", ErrStoreUnavailable, errors.New("context deadline exceeded")), "store unavailable", true},
		{errors.New("surprise at /var/lib"), "Internal Server Error", true},
		{dedupe.ErrInFlight, dedupe.ErrInFlight.Error(), false},
		{ErrDownstreamUnavailable, ErrDownstreamUnavailable.Error(), false},
	}
	for _, tt := range tests {
		msg, hidden := publicMessage(tt.err)
		require.Equal(t, tt.msg, msg, tt.err.Error())
		require.Equal(t, tt.hidden, hidden, tt.err.Error())
	}
}

// TestOutcomesAreListedOnce: every outcome the status table can give is in
// Outcomes (metrics start a series for each), no value is listed twice, and
// none is the bare word "rejected", which means any 4xx (RejectedByHeader).
func TestOutcomesAreListedOnce(t *testing.T) {
	listed := map[Outcome]bool{}
	for _, o := range Outcomes() {
		require.False(t, listed[o], "%s listed twice", o)
		require.NotEqual(t, "rejected", o.String())
		listed[o] = true
	}
	for _, row := range append(statusTable, lookup(errors.New("unlisted"))) {
		require.True(t, listed[row.outcome], "%s is missing from Outcomes", row.outcome)
	}
	for _, o := range []Outcome{OutcomeForwarded, OutcomeReplayed, OutcomeCoreRejected} {
		require.True(t, listed[o], "%s is missing from Outcomes", o)
	}
}
