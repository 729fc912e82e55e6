package spec

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// aliasBomb is the shape of issue 26's spec: one example body of
// bodyBytes named by an anchor, and copies examples that alias it, in a
// file of a few bytes a copy.
func aliasBomb(bodyBytes, copies int) string {
	var b strings.Builder
	b.WriteString("name: acme\nsecrets: {variable: SECRETS}\n")
	b.WriteString("signature: {header: X-Sig, algorithm: hmac-sha256, encoding: hex, signed: \"{{body}}\"}\n")
	b.WriteString("event: {key: \"{{json.id}}\"}\nexamples:\n")
	b.WriteString("  - {name: e, secret: s, headers: {X-Sig: ab}, body: &b '{\"id\":\"")
	b.WriteString(strings.Repeat("x", bodyBytes))
	b.WriteString("\"}'}\n")
	for range copies {
		b.WriteString("  - {secret: s, body: *b}\n")
	}
	return b.String()
}

// TestDecodedSizeBounded holds a spec's size once its aliases are
// expanded to its file's bound: the 125 KiB file naming one
// 100 KB body 4,000 times is refused, naming the file, without
// allocating the 400 MB it asks for.
func TestDecodedSizeBounded(t *testing.T) {
	data := []byte(aliasBomb(100_000, 4000))
	require.Less(t, len(data), maxFileBytes)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Load("specs/bomb.yaml", data)
	runtime.ReadMemStats(&after)

	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("Load allocated %.1f MiB", float64(allocated)/(1<<20))
	require.Less(t, allocated, uint64(32<<20), "Load allocated %d MiB", allocated>>20)
	require.EqualError(t, err, "specs/bomb.yaml: decodes to more than 1048576 bytes once its aliases are expanded")
}

func TestDecodedSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		ok   bool
	}{
		{"a few aliases", "a: &a " + strings.Repeat("x", 1000) + "\nb: [*a, *a, *a]\n", true},
		{"aliases past the bound", "a: &a " + strings.Repeat("x", 100_000) + "\nb: [" + strings.Repeat("*a, ", 11) + "*a]\n", false},
		{"nested aliases", "a: &a [" + strings.Repeat("x, ", 99) + "x]\n" +
			"b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n" +
			"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode([]byte(tc.yaml))
			require.Error(t, err) // none is a spec
			require.Equal(t, !tc.ok, strings.Contains(err.Error(), "once its aliases are expanded"), err.Error())
		})
	}
}
