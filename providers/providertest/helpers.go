package providertest

import (
	"bytes"
	"path/filepath"
	"slices"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// clock is the adapter's clock under the kit: each fixture starts at a
// fresh time, which a retry advances.
type clock struct{ t time.Time }

func newClock() *clock { return &clock{t: time.Now().Truncate(time.Second)} }

func (c *clock) get() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// with returns d carrying body instead of its own.
func with(d providers.Delivery, body []byte) providers.Delivery {
	d.Body = body
	return d
}

// positions picks up to five byte offsets spread over n bytes.
func positions(n int) []int {
	if n <= 0 {
		return nil
	}
	var out []int
	for _, at := range []int{0, n / 4, n / 2, 3 * n / 4, n - 1} {
		if !slices.Contains(out, at) {
			out = append(out, at)
		}
	}
	return out
}

// flip changes one bit of s[at]. XOR 1 never turns a letter into its other
// case, so a hex digit cannot change into an equivalent one.
func flip(s string, at int) string {
	return string(flipAt([]byte(s), at))
}

func flipAt(body []byte, at int) []byte {
	b := bytes.Clone(body)
	b[at] ^= 0x01
	return b
}

// swapAlnum turns a letter or digit into another of its kind.
func swapAlnum(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c ^ 0x01
	case 'a' <= c && c <= 'z':
		return 'a' + (c-'a'+1)%26
	case 'A' <= c && c <= 'Z':
		return 'A' + (c-'A'+1)%26
	}
	return c
}

func swapAt(body []byte, at int) []byte {
	b := bytes.Clone(body)
	b[at] = swapAlnum(b[at])
	return b
}

func replaceRange(body []byte, start, end int, with string) []byte {
	out := make([]byte, 0, len(body)+len(with))
	out = append(out, body[:start]...)
	out = append(out, with...)
	return append(out, body[end:]...)
}

func contains(names []string, name string) bool { return slices.Contains(names, name) }

func keysOf(evs []providers.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Key
	}
	return out
}

func fingerprintsOf(evs []providers.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Fingerprint
	}
	return out
}

func keysAndTypes(evs []providers.Event) [][2]string {
	out := make([][2]string, len(evs))
	for i, ev := range evs {
		out[i] = [2]string{ev.Key, ev.Type}
	}
	return out
}

func baseName(path string) string { return filepath.Base(path) }
