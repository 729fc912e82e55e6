package midtrans

import (
	"errors"
	"regexp"
	"testing"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

var plainDecimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// FuzzParseStatus checks that no GET status answer makes parseStatus panic,
// and that it either reports a status or fails with one of Confirm's errors.
func FuzzParseStatus(f *testing.F) {
	for _, s := range []string{
		`{"status_code":"200","transaction_id":"t","order_id":"o","transaction_status":"settlement","fraud_status":"accept"}`,
		`{"status_code":"404","status_message":"Transaction doesn't exist."}`,
		`{"status_code":404}`, `{"transaction_status":""}`, `{"transaction_status":"x","order_id":5}`,
		`{"transaction_status":"x","order_id":{}}`, `<html>`, ``, `null`,
		`{"transaction_status":"partial_refund","refunds":[{"refund_key":"r","refund_amount":"1.00"},{"refund_amount":2}]}`,
		`{"transaction_status":"refund","refunds":null}`, `{"transaction_status":"refund","refunds":[1]}`,
		`{"transaction_status":"refund","refunds":{}}`, `{"transaction_status":"refund","refunds":[{"refund_key":[]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		r, err := parseStatus(answer)
		switch {
		case err == nil && r.status == "":
			t.Fatalf("parseStatus(%q) reports no status and no error", answer)
		case err != nil && !errors.Is(err, providers.ErrMismatch) && !errors.Is(err, providers.ErrUnavailable):
			t.Fatalf("parseStatus error %v is neither a mismatch nor unavailability", err)
		case err == nil && !r.hasRefunds && r.refunds != nil:
			t.Fatalf("parseStatus(%q) reports refunds without a refunds array", answer)
		}
		for _, e := range r.refunds {
			// An amount compares equal to itself exactly when it is a
			// plain decimal.
			if e.amount != "" && statusapi.SameDecimal(e.amount, e.amount) != plainDecimal.MatchString(e.amount) {
				t.Fatalf("SameDecimal(%q, itself) disagrees with its shape", e.amount)
			}
		}
	})
}
