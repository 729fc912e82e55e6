package capture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestFileName(t *testing.T) {
	long := strings.Repeat("x", 400)
	tests := []struct {
		key  string
		want string // exact name, or "" to check only the invariants
	}{
		{"evt_1NG8Du2eZvKYlo2CUI79vXWy", "evt_1NG8Du2eZvKYlo2CUI79vXWy.json"},
		{"invoice.paid-abc", "invoice.paid-abc.json"},
		{"b0b3f0c1-7a44:settlement:accept", ""},
		{"../../etc/passwd", ""},
		{"..", ""},
		{".", ""},
		{"", ""},
		{"/abs/path", ""},
		{`a\b`, ""},
		{"a/b", ""},
		{"a:b", ""},
		{"a_b", "a_b.json"},
		{"line\nbreak\x00nul\x1b[31m", ""},
		{"-rf", ""},
		{".hidden", ""},
		{"CON", ""},
		{"nul.txt", ""},
		{"COM1", ""},
		{"COMPLETED", "COMPLETED.json"},
		{"héllo wörld", ""},
		{long, ""},
		{long + "y", ""},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		name := FileName(tt.key)
		if tt.want != "" {
			require.Equal(t, tt.want, name, "key %q", tt.key)
		}
		requireSafe(t, tt.key, name)
		require.Equal(t, name, FileName(tt.key), "stable")
		prev, dup := seen[name]
		require.False(t, dup, "keys %q and %q share the name %q", prev, tt.key, name)
		seen[name] = tt.key
	}
	// A changed key carries a hash, so the long keys that share their first
	// bytes still get distinct names.
	require.NotEqual(t, FileName(long), FileName(long+"y"))
}

// requireSafe checks what must hold for any key: one plain path element,
// visible, not an option, bounded, printable ASCII, and .json.
func requireSafe(t *testing.T, key, name string) {
	t.Helper()
	require.True(t, strings.HasSuffix(name, ".json"), "key %q: %q", key, name)
	require.LessOrEqual(t, len(name), MaxNameBytes, "key %q", key)
	require.Equal(t, name, filepath.Base(name), "key %q: %q is not one path element", key, name)
	require.NotContains(t, name, "/")
	require.NotContains(t, name, `\`)
	require.NotContains(t, name, ":")
	require.False(t, strings.HasPrefix(name, "."), "key %q: hidden %q", key, name)
	require.False(t, strings.HasPrefix(name, "-"), "key %q: %q looks like an option", key, name)
	require.True(t, utf8.ValidString(name))
	for _, c := range []byte(name) {
		require.True(t, safeByte(c), "key %q: byte %q in %q", key, c, name)
	}
	require.False(t, reserved(strings.TrimSuffix(name, ".json")), "key %q: reserved %q", key, name)
}

func FuzzFileName(f *testing.F) {
	for _, s := range []string{"evt_1", "../x", "", ".", "a:b:c", "\x00", strings.Repeat("é", 200), "CON"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		requireSafe(t, key, FileName(key))
	})
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "captures") // created by New
	w, err := New(dir, nil)
	require.NoError(t, err)

	body := []byte("{\"id\":\"evt_1\"}\n")
	require.NoError(t, w.Write("stripe", "evt_1", body))
	got, err := os.ReadFile(filepath.Join(dir, "stripe", "evt_1.json"))
	require.NoError(t, err)
	require.Equal(t, body, got)

	// A second capture of the event replaces the first, whole.
	body2 := []byte(`{"id":"evt_1","pending_webhooks":0}`)
	require.NoError(t, w.Write("stripe", "evt_1", body2))
	got, err = os.ReadFile(w.Path("stripe", "evt_1"))
	require.NoError(t, err)
	require.Equal(t, body2, got)

	// A hostile key stays inside the provider's folder.
	require.NoError(t, w.Write("stripe", "../../escape", body))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the provider folder at the top")
	entries, err = os.ReadDir(filepath.Join(dir, "stripe"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Len(t, names, 2, "no temporary file left behind: %v", names)
	require.Contains(t, names, "evt_1.json")
	require.Contains(t, names, FileName("../../escape"))
}

func TestWriteFailureIsReportedNotPanicked(t *testing.T) {
	dir := t.TempDir()
	w, err := New(dir, nil)
	require.NoError(t, err)
	// The provider's folder cannot be created: a file is in the way.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stripe"), nil, 0o600))
	require.Error(t, w.Write("stripe", "evt_1", []byte("{}")))
	w.Hook()("stripe", "evt_1", []byte("{}")) // logs and returns
}

func TestNewRefusesEmptyDir(t *testing.T) {
	_, err := New("", nil)
	require.Error(t, err)
}

// BenchmarkWrite measures what capturing adds to a delivery's path: one
// temporary file, its fsync, and a rename, for a 4 KiB body.
func BenchmarkWrite(b *testing.B) {
	w, err := New(b.TempDir(), nil)
	require.NoError(b, err)
	body := []byte(strings.Repeat("x", 4096))
	b.SetBytes(int64(len(body)))
	i := 0
	for b.Loop() {
		if err := w.Write("stripe", "evt_"+strings.Repeat("0", i%8), body); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
