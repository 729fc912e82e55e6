package admin

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLocalPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/", "/"},
		{"/records", "/records"},
		{"/records?key=stripe:evt_1&page=2", "/records?key=stripe:evt_1&page=2"},
		{"/%09/evil", "/%09/evil"}, // a browser keeps %09 encoded: a path on this host
		{"/%2F%2Fevil.com", "/%2F%2Fevil.com"},
		{"", "/"},
		{"records", "/"},
		{"https://x", "/"},
		{"//evil.com", "/"},
		{"/\\evil.com", "/"},
		{"/\t/evil.com", "/"}, // browsers drop the tab: //evil.com
		{"/\n/evil.com", "/"},
		{"/\r/evil.com", "/"},
		{"/\x00", "/"},
		{"/a\x7f", "/"},
		{"/./\\evil.com", "/"}, // http.Redirect cleans it to /\evil.com
		{"/a/../\\evil.com", "/"},
		{"\t/records", "/"},
		{" /records", "/"},
		{"///evil.com", "/"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got := localPath(tc.in)
			require.Equal(t, tc.want, got)
			// What the browser is sent never starts with // or /\.
			w := httptest.NewRecorder()
			http.Redirect(w, httptest.NewRequest(http.MethodPost, "/signin", nil), got, http.StatusSeeOther)
			loc := w.Header().Get("Location")
			require.Equal(t, byte('/'), loc[0])
			if len(loc) > 1 {
				require.NotContains(t, "/\\", string(loc[1]), loc)
			}
		})
	}
}

// FuzzLocalPath: whatever the form sends, the redirect stays on this
// listener: "/" or the input itself, never "//" or "/\" at its start, and
// no control character or "\" anywhere.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/", "/records", "//evil.com", "/\\evil.com", "/\t/evil.com", "/./\\x", "https://x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := localPath(in)
		if got != "/" && got != in {
			t.Fatalf("localPath(%q) = %q", in, got)
		}
		if len(got) > 1 && (got[1] == '/' || got[1] == '\\') {
			t.Fatalf("localPath(%q) = %q leaves the listener", in, got)
		}
		for i := 0; i < len(got); i++ {
			if c := got[i]; c < 0x20 || c == 0x7f || c == '\\' {
				t.Fatalf("localPath(%q) = %q keeps %q", in, got, c)
			}
		}
	})
}
