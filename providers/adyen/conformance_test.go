package adyen_test

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/adyen"
	"github.com/webhookd/webhookd/providers/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(keys []string, _ func() time.Time) (providers.Provider, error) {
			return adyen.New(keys)
		},
		Secrets:  [2]string{exampleKey, otherKey},
		Fixtures: fixtures,
		// Adyen's retry resends the items' fields; its serialisation
		// may order members otherwise or carry one it added since.
		Retry: providertest.Chain(providertest.Reordered,
			providertest.WithMember("added_later", `{"note":"a member Adyen added since the first attempt"}`)),
		Change:     providertest.ChangeAmount("value"),
		TamperItem: tamperItem,
		Examples: []providertest.Example{{
			Source:   "https://github.com/Adyen/adyen-go-api-library/blob/main/src/hmacvalidator/hmacvalidator_test.go",
			Secret:   vecKey,
			Delivery: providers.Delivery{Body: notification(vecItem(vecSignature))},
			Keys:     []string{"merchantAccount:pspReference:EVENT:true"},
		}},
	})
}

// itemTampers change one signed part of an item's bytes each.
var itemTampers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`("pspReference"\s*:\s*")W`), "${1}V"},
	{regexp.MustCompile(`("merchantAccountCode"\s*:\s*")W`), "${1}V"},
	{regexp.MustCompile(`("merchantReference"\s*:\s*")o`), "${1}p"},
	{regexp.MustCompile(`("value"\s*:\s*)([0-9])`), "${1}9${2}"},
	{regexp.MustCompile(`("currency"\s*:\s*")E`), "${1}F"},
	{regexp.MustCompile(`("eventCode"\s*:\s*")[A-Z]`), "${1}X"},
	{regexp.MustCompile(`("success"\s*:\s*")(true|false)`), "${1}maybe"},
	{regexp.MustCompile(`("hmacSignature"\s*:\s*")[A-Za-z0-9+/]`), "${1}."},
	{regexp.MustCompile(`("hmacSignature"\s*:\s*")[^"]*`), "${1}"},
	{regexp.MustCompile(`"hmacSignature"`), `"hmacSignaturf"`},
}

// tamperItem is the kit's TamperItem: item i of a signed notification, found
// by its bytes (which its one-item forwarded body holds unchanged), with one
// signed part changed per copy.
func tamperItem(body []byte, i int) [][]byte {
	a, err := adyen.New([]string{exampleKey})
	if err != nil {
		return nil
	}
	items, err := a.Parse(providers.Delivery{Body: body})
	if err != nil || i >= len(items) {
		return nil
	}
	one := items[i].Body
	start := bytes.Index(one, []byte(`"notificationItems":[`)) + len(`"notificationItems":[`)
	raw := one[start : len(one)-len(`]}`)]
	at := bytes.Index(body, raw)
	if at < 0 {
		return nil
	}
	var out [][]byte
	for _, tt := range itemTampers {
		changed := tt.re.ReplaceAll(bytes.Clone(raw), []byte(tt.with))
		if bytes.Equal(changed, raw) {
			continue
		}
		b := append(append(append([]byte{}, body[:at]...), changed...), body[at+len(raw):]...)
		out = append(out, b)
	}
	return out
}
