package duitku_test

import (
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/duitku"
	"github.com/webhookd/webhookd/providers/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(apiKey string, _ func() time.Time) (providers.Provider, error) {
			return duitku.New(fixtureMerchant, []string{apiKey})
		},
		Secret:      "duitku_conformance_key_a",
		OtherSecret: "duitku_conformance_key_b",
		Fixtures:    fixtures,
		Form:        true,
		// Duitku's retry is the same callback; its fields in another
		// order or with a field Duitku added since must not make it a
		// different payload.
		Retry:          providertest.Chain(providertest.FormReordered, providertest.WithFormField("addedLater", "1")),
		Change:         providertest.ChangeFormAmount(duitku.FieldAmount),
		SignatureField: duitku.FieldSignature,
		SignedFields:   []string{duitku.FieldMerchantCode, duitku.FieldAmount, duitku.FieldMerchantOrderID},
		// The key's reference and resultCode (the type) are not signed:
		// Confirm checks both with Duitku's status API when
		// WEBHOOKD_DUITKU_VERIFY_STATUS is on (confirm_test.go), and serve
		// warns while it is off.
		ConfirmedFields: []string{duitku.FieldReference, duitku.FieldResultCode},
	})
}
