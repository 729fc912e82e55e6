package midtrans

import (
	"errors"
	"testing"

	"github.com/webhookd/webhookd/providers"
)

// FuzzParseStatus checks that no GET status answer makes parseStatus panic,
// and that it either reports a status or fails with one of Confirm's errors.
func FuzzParseStatus(f *testing.F) {
	for _, s := range []string{
		`{"status_code":"200","transaction_id":"t","order_id":"o","transaction_status":"settlement","fraud_status":"accept"}`,
		`{"status_code":"404","status_message":"Transaction doesn't exist."}`,
		`{"status_code":404}`, `{"transaction_status":""}`, `{"transaction_status":"x","order_id":5}`,
		`{"transaction_status":"x","order_id":{}}`, `<html>`, ``, `null`,
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
		}
	})
}
