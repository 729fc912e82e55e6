package spec

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// rzpVector is builtin/razorpay.yaml's example: Razorpay's SDK vector
// (razorpay-go resources/verify_payment_test.go,
// TestVerifyWebhookSignature).
func rzpVector(t *testing.T) (*Spec, example) {
	t.Helper()
	s := builtinSpec(t, "razorpay")
	return s, exampleNamed(t, s, "razorpay-go")
}

// rzpCreated is the vector's created_at.
var rzpCreated = time.Unix(1652339806, 0)

// TestRazorpayMaxAge: the signed created_at, read from the body once the
// signature verifies, is refused (401) once older than the max age; a bad
// signature is named as such whatever the age; `webhookd replay` re-dates
// a fixture older than the bound, and only then, by whole half bounds, so
// that a replay a little later keeps its key.
func TestRazorpayMaxAge(t *testing.T) {
	s, ex := rzpVector(t)
	maxAge := 48 * time.Hour
	at := func(secret string, now time.Time) *Provider {
		p, err := s.New([]string{secret}, map[string]string{"MAX_AGE": maxAge.String()}, func() time.Time { return now })
		require.NoError(t, err)
		return p
	}
	d := providers.Delivery{Header: ex.header, Body: ex.body}
	for _, tt := range []struct {
		name string
		now  time.Time
		want error
	}{
		{"a minute later", rzpCreated.Add(time.Minute), nil},
		{"at the limit", rzpCreated.Add(maxAge), nil},
		{"a second past it", rzpCreated.Add(maxAge + time.Second), ErrTooOld},
		{"a year later", rzpCreated.AddDate(1, 0, 0), ErrTooOld},
		{"before it was created", rzpCreated.Add(-time.Hour), nil},
	} {
		err := at(ex.secret, tt.now).Verify(context.Background(), d)
		if tt.want == nil {
			require.NoError(t, err, tt.name)
			continue
		}
		require.ErrorIs(t, err, tt.want, tt.name)
	}
	require.ErrorIs(t, at("other", rzpCreated.AddDate(1, 0, 0)).Verify(context.Background(), d), ErrNoValidSignature)

	now := rzpCreated.AddDate(1, 0, 0)
	redated := func(now time.Time) providers.Event {
		p := at(ex.secret, now)
		signed, err := p.Sign(ex.body)
		require.NoError(t, err)
		require.NoError(t, p.Verify(context.Background(), signed))
		items, err := p.Parse(signed)
		require.NoError(t, err)
		return items[0].Event
	}
	ev := redated(now)
	step := int64(maxAge / time.Second / 2)
	moved := rzpCreated.Unix() + (now.Unix()-rzpCreated.Unix())/step*step
	require.Equal(t, "payment.authorized:pay_JUEM4c0pSLpFEW:"+strconv.FormatInt(moved, 10), ev.Key)
	require.Greater(t, moved, now.Unix()-step)
	require.Equal(t, ev.Key, redated(now.Add(time.Minute)).Key, "a replay a minute later keeps the key")
	signed, err := at(ex.secret, rzpCreated.Add(time.Hour)).Sign(ex.body)
	require.NoError(t, err)
	require.Equal(t, ex.body, signed.Body, "a body within the bound is signed as it is")
	require.Equal(t, ex.header.Get("X-Razorpay-Signature"), signed.Header.Get("X-Razorpay-Signature"))
}

// TestRazorpaySettings: a signed created_at older than the retention is
// refused whether or not WEBHOOKD_RAZORPAY_MAX_AGE is set: unset (or 0),
// the retention is the bound; set, it must outlast Razorpay's 24 hours of
// retries and stay below the retention. Only with neither is an event of
// any age accepted, and replay signs a fixture unchanged.
func TestRazorpaySettings(t *testing.T) {
	s, ex := rzpVector(t)
	for _, tt := range []struct {
		name, maxAge string
		retention    time.Duration
		wantCheck    string
		wantErr      error
	}{
		{"default, a week's retention", "", 168 * time.Hour, "", ErrExpired},
		{"0, a week's retention", "0", 168 * time.Hour, "", ErrExpired},
		{"default, a short retention", "", 2 * time.Hour, "", ErrExpired},
		{"default, retention unknown", "", 0, "", nil},
		{"on, below the retention", "167h", 168 * time.Hour, "", ErrTooOld},
		{"on, retention unknown", "25h", 0, "", ErrTooOld},
		{"on, within Razorpay's retries", "24h", 168 * time.Hour,
			"WEBHOOKD_RAZORPAY_MAX_AGE: 24h0m0s must be longer than Razorpay's 24h of retries", nil},
		{"on, not below the retention", "168h", 168 * time.Hour,
			"WEBHOOKD_RAZORPAY_MAX_AGE: 168h0m0s must be shorter than WEBHOOKD_RETENTION (168h0m0s)", nil},
		{"negative", "-1h", 168 * time.Hour,
			"WEBHOOKD_RAZORPAY_MAX_AGE: -1h0m0s must be longer than Razorpay's 24h of retries", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := s.Entry().Settings().(*Settings)
			for _, v := range st.Variables() {
				switch v.Name {
				case "RAZORPAY_SECRETS":
					require.NoError(t, v.Set(ex.secret))
				case "RAZORPAY_MAX_AGE":
					require.NoError(t, v.Set(tt.maxAge))
				}
			}
			err := st.Check(providers.Env{Var: func(n string) string { return "WEBHOOKD_" + n }, Retention: tt.retention})
			if tt.wantCheck != "" {
				require.Error(t, err)
				require.True(t, strings.HasPrefix(err.Error(), tt.wantCheck), err.Error())
				return
			}
			require.NoError(t, err)
			p, err := st.Build()
			require.NoError(t, err)
			d := providers.Delivery{Header: ex.header, Body: ex.body}
			require.ErrorIs(t, p.Verify(context.Background(), d), tt.wantErr)
			if tt.wantErr != nil {
				require.Equal(t, providers.ReasonTimestamp, providers.Reason(p.Verify(context.Background(), d)))
				return
			}
			signed, err := providers.Sign(p, ex.body)
			require.NoError(t, err)
			require.Equal(t, ex.body, signed.Body)
		})
	}
}

// TestRazorpayKeys walks the key of docs/contract.md: the event, the id of
// the payload entity contains names first, and created_at; a delivery
// whose parts are missing or unusable is 400.
func TestRazorpayKeys(t *testing.T) {
	s, ex := rzpVector(t)
	p, err := s.New([]string{ex.secret}, nil, nil)
	require.NoError(t, err)
	body := func(contains, payload string) string {
		return `{"entity":"event","event":"refund.processed","contains":` + contains + `,"payload":` + payload + `,"created_at":1773566502}`
	}
	both := `{"refund":{"entity":{"id":"rfnd_1"}},"payment":{"entity":{"id":"pay_1"}}}`
	for _, tt := range []struct {
		name, body, key string
	}{
		{"the first of contains", body(`["refund","payment"]`, both), "refund.processed:rfnd_1:1773566502"},
		{"the first, in the other order", body(`["payment","refund"]`, both), "refund.processed:pay_1:1773566502"},
		{"contains empty", body(`[]`, both), ""},
		{"contains not a list", body(`"refund"`, both), ""},
		{"contains names an object", body(`[{"a":1}]`, both), ""},
		{"contains names an absent entity", body(`["order"]`, both), ""},
		{"contains names a member with a space", body(`["re fund"]`, both), ""},
		{"entity without id", body(`["refund"]`, `{"refund":{"entity":{}}}`), ""},
		{"payload not an object", body(`["refund"]`, `[]`), ""},
		{"id with a colon", body(`["refund"]`, `{"refund":{"entity":{"id":"a:b"}}}`), ""},
		{"contains spelled another way", strings.Replace(body(`["refund"]`, both), `"contains"`, `"Contains"`, 1), ""},
	} {
		items, err := p.Parse(providers.Delivery{Header: http.Header{}, Body: []byte(tt.body)})
		if tt.key == "" {
			require.ErrorIs(t, err, ErrNoEventKey, tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.key, items[0].Key, tt.name)
		require.Equal(t, "refund.processed", items[0].Type, tt.name)
	}
}

// TestPathSteps: what json paths with an index or a member named by a
// value are refused for.
func TestPathSteps(t *testing.T) {
	base := readSpec(t, "builtin/razorpay.yaml")
	for _, tc := range []struct{ name, old, new, want string }{
		{"steps in v1", "version: 2\n", "", "needs version: 2"},
		{"index first", "{{json.payload.(contains.0).entity.id}}", "{{json.0.id}}", "an index (0 to 999) follows a member name"},
		{"index of an index", "(contains.0)", "(contains.0.1)", "an index (0 to 999) follows a member name"},
		{"index too large", "(contains.0)", "(contains.1000)", "an index (0 to 999)"},
		{"nested parentheses", "(contains.0)", "((contains.0))", "not nested"},
		{"unclosed parenthesis", "(contains.0).entity", "(contains.0.entity", "not nested"},
		{"parenthesis inside a step", "(contains.0).entity", "(contains.0)entity", "a parenthesis ends a step"},
		{"body timestamp not in the key", `:{{json.created_at}}"`, `"`, "json.created_at must be part of every event key"},
		{"body timestamp nested", `value: "{{json.created_at}}"`, `value: "{{json.payload.created_at}}"`, "a timestamp in the body is a top-level member"},
		{"body timestamp in ms", "  tolerance: MAX_AGE", "  tolerance: MAX_AGE\n  unit: ms", "a timestamp in the body is Unix seconds"},
		{"longer_than on a string", "    type: duration\n", "", "longer_than: is for duration settings"},
		{"longer_than without what", "      what: Razorpay's", "      wat: Razorpay's", "field wat not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, base, tc.old)
			_, err := Load("razorpay.yaml", []byte(strings.Replace(base, tc.old, tc.new, 1)))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestRazorpayVerify walks the SDK vector and its negative cases on
// builtin/razorpay.yaml: the hex HMAC of the raw body under any
// configured secret, in either case; anything else is 401, with its
// reason.
func TestRazorpayVerify(t *testing.T) {
	s, ex := rzpVector(t)
	sig := ex.header.Get("X-Razorpay-Signature")
	h := func(values ...string) http.Header { return http.Header{"X-Razorpay-Signature": values} }
	body := string(ex.body)
	for _, tt := range []struct {
		name    string
		secrets []string
		header  http.Header
		body    string
		want    string
	}{
		{"vector", nil, h(sig), body, ""},
		{"upper-case hex is the same bytes", nil, h(strings.ToUpper(sig)), body, ""},
		{"rotation: old secret second", []string{"new-secret", ex.secret}, h(sig), body, ""},
		{"rotation: old secret first", []string{ex.secret, "new-secret"}, h(sig), body, ""},
		{"the unsigned event id changes nothing", nil, http.Header{"X-Razorpay-Signature": {sig}, "X-Razorpay-Event-Id": {"Fresh123"}}, body, ""},
		{"wrong secret", []string{"1234567"}, h(sig), body, providers.ReasonSignatureInvalid},
		{"amount edited", nil, h(sig), strings.Replace(body, `"amount":12300`, `"amount":1230`, 1), providers.ReasonSignatureInvalid},
		{"re-serialised", nil, h(sig), strings.Replace(body, `,"`, `, "`, 1), providers.ReasonSignatureInvalid},
		{"trailing new line", nil, h(sig), body + "\n", providers.ReasonSignatureInvalid},
		{"last hex digit changed", nil, h(sig[:63] + "7"), body, providers.ReasonSignatureInvalid},
		{"not hex", nil, h(strings.Repeat("z", 64)), body, providers.ReasonSignatureInvalid},
		{"truncated", nil, h(sig[:62]), body, providers.ReasonSignatureInvalid},
		{"sent twice", nil, h(sig, sig), body, providers.ReasonSignatureInvalid},
		{"no header", nil, nil, body, providers.ReasonSignatureMissing},
		{"empty header", nil, h(""), body, providers.ReasonSignatureMissing},
	} {
		secrets := tt.secrets
		if secrets == nil {
			secrets = []string{ex.secret}
		}
		p, err := s.New(secrets, nil, func() time.Time { return ex.now }, WithRetention(168*time.Hour))
		require.NoError(t, err)
		err = p.Verify(context.Background(), providers.Delivery{Header: tt.header, Body: []byte(tt.body)})
		if tt.want == "" {
			require.NoError(t, err, tt.name)
			continue
		}
		require.Equal(t, tt.want, providers.Reason(err), tt.name)
		require.NotContains(t, err.Error(), ex.secret, tt.name)
	}
}

// FuzzPathSteps: no path and body make parsing a path of steps or looking
// it up panic, and a value found is a string, number or boolean's text.
func FuzzPathSteps(f *testing.F) {
	f.Add("payload.(contains.0).entity.id", `{"contains":["refund","payment"],"payload":{"refund":{"entity":{"id":"rfnd_1"}}}}`)
	f.Add("contains.0", `{"contains":["a"]}`)
	f.Add("a.(b).c", `{"b":"x","a":{"x":{"c":1}}}`)
	f.Add("a.(b.0)", `{"b":[{}],"a":{}}`)
	f.Add("a.999", `{"a":[1,2]}`)
	f.Fuzz(func(t *testing.T, path, body string) {
		steps, err := parseSteps(path, true)
		if err != nil {
			return
		}
		o, err := rawjson.Parse([]byte(body))
		if err != nil {
			return
		}
		v, ok, err := lookupSteps(o, steps)
		if err == nil && ok && (v == "" && !strings.Contains(body, `""`)) {
			t.Fatalf("found an empty value in %q at %q", body, path)
		}
	})
}
