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
		out    outcome
	}{
		{ErrUnknownProvider, http.StatusNotFound, OutcomeNotFound},
		{ErrTooLarge, http.StatusRequestEntityTooLarge, OutcomeTooLarge},
		{fmt.Errorf("%w: bad sig", providers.ErrUnauthorized), http.StatusUnauthorized, OutcomeUnauthorized},
		{fmt.Errorf("%w: status differs", providers.ErrMismatch), http.StatusUnauthorized, OutcomeUnauthorized},
		{fmt.Errorf("%w: not json", providers.ErrMalformed), http.StatusBadRequest, OutcomeBadRequest},
		{ErrBadEvent, http.StatusBadRequest, OutcomeBadRequest},
		{fmt.Errorf("%w: long", dedupe.ErrInvalidKey), http.StatusBadRequest, OutcomeBadRequest},
		{dedupe.ErrFingerprintMismatch, http.StatusUnprocessableEntity, OutcomeMismatch},
		{dedupe.ErrInFlight, http.StatusConflict, OutcomeConflict},
		{ErrDownstreamUnavailable, http.StatusServiceUnavailable, OutcomeUnavailable},
		{fmt.Errorf("%w: disk full", dedupe.ErrUnavailable), http.StatusServiceUnavailable, OutcomeUnavailable},
		{dedupe.ErrClosed, http.StatusServiceUnavailable, OutcomeUnavailable},
		{fmt.Errorf("%w: timeout", providers.ErrUnavailable), http.StatusServiceUnavailable, OutcomeUnavailable},
		{errors.New("surprise"), http.StatusInternalServerError, OutcomeError},
	}
	for _, tt := range tests {
		status, out := classify(tt.err)
		require.Equal(t, tt.status, status, tt.err.Error())
		require.Equal(t, tt.out, out, tt.err.Error())
	}
}
