package xendit_test

import (
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/xendit"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(tok string, _ func() time.Time) (providers.Provider, error) {
			return xendit.New([]string{tok})
		},
		Secret:       token,
		OtherSecret:  tokenNew,
		Fixtures:     fixtures,
		BodyUnsigned: true,
	})
}
