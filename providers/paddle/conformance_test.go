package paddle_test

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paddle"
	"github.com/webhookd/webhookd/providers/providertest"
)

const fixtures = "../../fixtures/paddle"

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(secrets []string, now func() time.Time) (providers.Provider, error) {
			return paddle.New(secrets, tolerance, paddle.WithClock(now))
		},
		Secrets:   [2]string{vecGoSecret, vecPySecretGood},
		Tolerance: tolerance,
		Fixtures:  fixtures,
		// A replay from the dashboard is a new notification of the same
		// event: a new notification_id; Paddle may also serialise the
		// members in another order and add fields over time.
		Retry: providertest.Chain(newNotificationID, providertest.Reordered,
			providertest.WithMember("added_later", `{"note":"a field Paddle added since the first attempt"}`)),
		// Transactions and adjustments carry totals.total; a subscription
		// only its items' unit_price.amount.
		Change: providertest.ChangeAmount("total", "amount"),
		Examples: []providertest.Example{{
			Source:   "https://github.com/PaddleHQ/paddle-go-sdk/blob/main/webhook_verifier_test.go",
			Secret:   vecGoSecret,
			Now:      time.Unix(vecGoTS+1, 0),
			Delivery: providers.Delivery{Header: http.Header{paddle.HeaderName: {vecGoHeader}}, Body: []byte(vecGoBody)},
			Keys:     []string{"evt_01hsdn97563968dy0szkmgjwh3"},
		}},
	})
}

var notificationID = regexp.MustCompile(`("notification_id"\s*:\s*)"ntf_[0-9a-z]+"`)

// newNotificationID gives the notification the id a replay of its event
// gets.
func newNotificationID(body []byte) []byte {
	return notificationID.ReplaceAll(body, []byte(`${1}"ntf_01jzzzreplayed0000000000000"`))
}

func TestNewNotificationIDChangesEveryFixture(t *testing.T) {
	for _, name := range fixtureNames(t) {
		body := readFixture(t, name)
		require.NotEqual(t, body, newNotificationID(body), name)
	}
}
