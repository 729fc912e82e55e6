package providers_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/adyen"
	"github.com/webhookd/webhookd/providers/doku"
	"github.com/webhookd/webhookd/providers/duitku"
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/spec"
)

// TestReason holds the reasons of docs/contract.md ("Refusals and the
// request log") to the adapters' errors whose reason no conformance
// property reaches: the account, certificate and status API checks. The
// kit checks missing, wrong and stale signatures for every adapter.
func TestReason(t *testing.T) {
	for _, c := range []struct {
		err    error
		reason string
	}{
		{nil, ""},
		{errors.New("anything else"), ""},
		{providers.ErrUnavailable, ""},
		{providers.ErrUnauthorized, providers.ReasonSignatureInvalid},
		{providers.ErrMalformed, providers.ReasonMalformed},
		{providers.ErrMismatch, providers.ReasonNotConfirmed},
		{spec.ErrNotSigned, providers.ReasonSignatureMissing},
		{fmt.Errorf("wrapped: %w", spec.ErrTooOld), providers.ReasonTimestamp},
		{adyen.ErrMerchantAccount, providers.ReasonAccountNotAllowed},
		{duitku.ErrForeignMerchant, providers.ReasonAccountNotAllowed},
		{doku.ErrWrongClient, providers.ReasonAccountNotAllowed},
		{paypal.ErrCertURL, providers.ReasonCertificateInvalid},
		{paypal.ErrUntrustedCert, providers.ReasonCertificateInvalid},
		{paypal.ErrForeignCert, providers.ReasonCertificateInvalid},
		{paypal.ErrCertExpired, providers.ReasonCertificateInvalid},
		{paypal.ErrTransmissionTime, providers.ReasonTimestamp},
		{paypal.ErrEventMismatch, providers.ReasonNotConfirmed},
		{midtrans.ErrStatusMismatch, providers.ReasonNotConfirmed},
		{duitku.ErrStatusMismatch, providers.ReasonNotConfirmed},
		{spec.ErrNotJSON, providers.ReasonMalformed},
		{spec.ErrNoEventKey, providers.ReasonNoEventKey},
		{adyen.ErrNoEventKey, providers.ReasonNoEventKey},
	} {
		require.Equal(t, c.reason, providers.Reason(c.err), "%v", c.err)
		if c.reason != "" {
			require.Contains(t, providers.Reasons(), c.reason)
		}
	}
}

// TestReasonKeepsTheText checks that a precise class reads as the class it
// wraps: the gateway's answer says no more than before reasons existed.
func TestReasonKeepsTheText(t *testing.T) {
	require.Equal(t, "delivery not authenticated: no signature header", spec.ErrNotSigned.Error())
	require.ErrorIs(t, spec.ErrNotSigned, providers.ErrUnauthorized)
	require.ErrorIs(t, spec.ErrNoEventKey, providers.ErrMalformed)
	for _, err := range []error{providers.ErrSignatureMissing, providers.ErrSignatureInvalid, providers.ErrTimestamp,
		providers.ErrAccountNotAllowed, providers.ErrCertificateInvalid} {
		require.Equal(t, providers.ErrUnauthorized.Error(), err.Error())
	}
	require.Equal(t, providers.ErrMalformed.Error(), providers.ErrNoEventKey.Error())
}

// TestReasonAllocatesNothing: Reason is on the path of every refusal,
// which anyone can send.
func TestReasonAllocatesNothing(t *testing.T) {
	err := fmt.Errorf("%w (item 1 of 2)", spec.ErrNotSigned)
	joined := errors.Join(errors.New("other"), paypal.ErrCertURL)
	require.Equal(t, providers.ReasonCertificateInvalid, providers.Reason(joined))
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if providers.Reason(err) != providers.ReasonSignatureMissing {
			t.Fatal("wrong reason")
		}
	}))
}
