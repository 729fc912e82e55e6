package routing_test

import (
	"testing"

	"github.com/webhookd/webhookd/routing"
)

func routingParse(o routing.Options, file string) (*routing.Config, error) {
	return routing.Parse("routes.yaml", []byte(file), 0o600, o)
}

// FuzzParse: any file is loaded or refused with an error, never a panic,
// and an error is one line.
func FuzzParse(f *testing.F) {
	f.Add(good)
	f.Add("sources: [{name: a, provider: stripe, settings: {secrets: x}}]\ndestinations: [{name: d, url: 'http://c'}]\nroutes: [{to: [d]}]\n")
	f.Add("a: &x [*x, *x]\n")
	o := options(f, testEnv)
	f.Fuzz(func(t *testing.T, file string) {
		_, err := routingParse(o, file)
		if err != nil {
			for _, c := range err.Error() {
				if c == '\n' {
					t.Fatalf("a two-line error: %q", err)
				}
			}
		}
	})
}
