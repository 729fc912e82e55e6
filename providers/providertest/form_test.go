package providertest_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/signature"
)

// formToy posts a form whose field sig is the hex HMAC of id and amount,
// Duitku's shape; the key is id. Each flaw breaks one property the kit must
// catch.
type formToy struct {
	secrets []string
	flaw    string
}

func (p *formToy) Name() string { return "formtoy" }

func (p *formToy) mac(secret string, v url.Values) string {
	msg := v.Get("id") + "|" + v.Get("kind") + "|" + v.Get("amount")
	switch {
	case p.flaw == "ignores-amount":
		msg = v.Get("id") + "|" + v.Get("kind")
	case strings.HasPrefix(p.flaw, "kind-unsigned"):
		// Duitku's shape: the type comes from a field the signature
		// does not cover.
		msg = v.Get("id") + "|" + v.Get("amount")
	}
	return signature.HMACSHA256Hex([]byte(secret), []byte(msg))
}

// values reads the form; without the flaw a field given twice is refused.
func (p *formToy) values(body []byte) (url.Values, error) {
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, providers.ErrMalformed
	}
	for _, vs := range v {
		if len(vs) > 1 && p.flaw != "merges-repeated" {
			return nil, providers.ErrMalformed
		}
	}
	return v, nil
}

func (p *formToy) Sign(body []byte) (providers.Delivery, error) {
	v, err := p.values(body)
	if err != nil {
		return providers.Delivery{}, err
	}
	var pairs []string
	for _, pair := range strings.Split(string(body), "&") {
		if !strings.HasPrefix(pair, "sig=") {
			pairs = append(pairs, pair)
		}
	}
	out := strings.Join(append(pairs, "sig="+p.mac(p.secrets[0], v)), "&")
	return providers.Delivery{Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: []byte(out)}, nil
}

func (p *formToy) Verify(_ context.Context, d providers.Delivery) error {
	v, err := p.values(d.Body)
	if err != nil {
		return err
	}
	if v.Get("sig") == "" {
		return providers.ErrSignatureMissing
	}
	for _, secret := range p.secrets {
		if signature.EqualString(v.Get("sig"), p.mac(secret, v)) {
			return nil
		}
	}
	return providers.ErrSignatureInvalid
}

func (p *formToy) Parse(d providers.Delivery) ([]providers.Item, error) {
	v, err := p.values(d.Body)
	if err != nil || v.Get("id") == "" {
		return nil, providers.ErrMalformed
	}
	ev := providers.Event{Key: v.Get("id"), Type: v.Get("kind"), Fingerprint: v.Get("id") + "|" + v.Get("kind") + "|" + v.Get("amount")}
	return []providers.Item{{Event: ev, Body: d.Body}}, nil
}

// confirmingFormToy is a formToy that says it confirms kind with its
// provider, as Duitku's adapter confirms resultCode.
type confirmingFormToy struct{ *formToy }

func (confirmingFormToy) Confirm(context.Context, providers.Item) error { return nil }

// TestFormToy runs the kit in form mode on formToy with the flaw named by
// PROVIDERTEST_FORM_FLAW. The flaws "kind-unsigned..." declare honestly
// that kind is not signed; "-confirmed" adds it to Kit.ConfirmedFields,
// "-confirmer" makes the toy a providers.Confirmer too.
func TestFormToy(t *testing.T) {
	flaw := os.Getenv("PROVIDERTEST_FORM_FLAW")
	signed := []string{"id", "kind", "amount"}
	var confirmed []string
	if strings.HasPrefix(flaw, "kind-unsigned") {
		signed = []string{"id", "amount"}
	}
	if strings.Contains(flaw, "-confirmed") {
		confirmed = []string{"kind"}
	}
	providertest.Run(t, providertest.Kit{
		New: func(secrets []string, _ func() time.Time) (providers.Provider, error) {
			toy := &formToy{secrets: secrets, flaw: flaw}
			if strings.HasSuffix(flaw, "-confirmer") {
				return confirmingFormToy{toy}, nil
			}
			return toy, nil
		},
		Secrets:         [2]string{"form-toy-secret-a", "form-toy-secret-b"},
		Fixtures:        "testdata/formtoy",
		Format:          providertest.Form,
		SelfDerived:     "a toy: TestToy checks the published example",
		Retry:           providertest.Chain(providertest.FormReordered, providertest.WithFormField("later", "1")),
		Change:          providertest.ChangeFormAmount("amount"),
		SignatureField:  "sig",
		SignedFields:    signed,
		ConfirmedFields: confirmed,
	})
}

func TestKitCatchesFormFlaws(t *testing.T) {
	if _, child := os.LookupEnv("PROVIDERTEST_FORM_FLAW"); child {
		t.Skip("child process")
	}
	for _, tt := range []struct{ flaw, want string }{
		{"merges-repeated", "DuplicateFieldsRefused"},
		{"ignores-amount", "TamperedRefused"},
		// Duitku's gap: the type (and so the key) from an unsigned field.
		{"kind-unsigned", "UnsignedFieldsInert"},
		// Declaring the field confirmed needs a Confirmer.
		{"kind-unsigned-confirmed", "UnsignedFieldsInert"},
	} {
		t.Run(tt.flaw, func(t *testing.T) {
			t.Parallel()
			out, err := runKit("TestFormToy", "PROVIDERTEST_FORM_FLAW", tt.flaw)
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "the kit must fail on flaw %s; output:\n%s", tt.flaw, out)
			require.Contains(t, string(out), "--- FAIL: TestFormToy/e1.json/"+tt.want)
		})
	}
}

// TestKitAcceptsConfirmedFields: an unsigned kind declared in
// Kit.ConfirmedFields, on an adapter that is a providers.Confirmer,
// passes the kit (as Duitku's and Midtrans's adapters do).
func TestKitAcceptsConfirmedFields(t *testing.T) {
	if _, child := os.LookupEnv("PROVIDERTEST_FORM_FLAW"); child {
		t.Skip("child process")
	}
	out, err := runKit("TestFormToy", "PROVIDERTEST_FORM_FLAW", "kind-unsigned-confirmed-confirmer")
	require.NoError(t, err, "output:\n%s", out)
	require.Contains(t, string(out), "--- PASS: TestFormToy/e1.json/UnsignedFieldsInert")
}

func TestFormHelpers(t *testing.T) {
	body := []byte("a=1&amount=250&c=x+y")
	require.Equal(t, "c=x+y&amount=250&a=1", string(providertest.FormReordered(body)))
	require.Equal(t, "a=1&amount=250&c=x+y&d=e+f", string(providertest.WithFormField("d", "e f")(body)))
	require.Equal(t, string(body), string(providertest.WithFormField("a", "2")(body)), "a field already there is left alone")
	require.Equal(t, "a=1&amount=1250&c=x+y", string(providertest.ChangeFormAmount("amount")(body)))
	require.Equal(t, string(body), string(providertest.ChangeFormAmount("c")(body)), "no digit, no change")
	require.Equal(t, "{}&", string(providertest.FormReordered([]byte("{}&"))), "not a form: unchanged")
}
