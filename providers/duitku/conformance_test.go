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
		New: func(apiKeys []string, _ func() time.Time) (providers.Provider, error) {
			return duitku.New(fixtureMerchant, apiKeys)
		},
		Secrets:  [2]string{"duitku_conformance_key_a", "duitku_conformance_key_b"},
		Fixtures: fixtures,
		Format:   providertest.Form,
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
		Examples: []providertest.Example{{
			Source: "https://github.com/duitkupg/duitku-php/blob/master/tests/CallbackApiTest.php (tests/params/ParamsCallback.json)",
			Secret: vecKey,
			// The merchant code is signed: the example's, not the fixtures'.
			New: func(apiKeys []string, _ func() time.Time) (providers.Provider, error) {
				return duitku.New(vecMerchant, apiKeys)
			},
			Delivery: providers.Delivery{Body: []byte(vecBody)},
			Keys:     []string{"12345:D00015HL5BJKRM27MCUS:00"},
		}},
	})
}
