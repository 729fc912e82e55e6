package form

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		body    string
		want    Form
		wantErr error
	}{
		{body: "a=1&b=%41%2B+x&c", want: Form{
			{Name: "a", Raw: "1", Start: 2, End: 3},
			{Name: "b", Raw: "%41%2B+x", Start: 6, End: 14},
			{Name: "c", Raw: "", Start: 16, End: 16},
		}},
		{body: "a=", want: Form{{Name: "a", Raw: "", Start: 2, End: 2}}},
		{body: "", wantErr: ErrEmpty},
		{body: "a=1&&b=2", wantErr: ErrEmptyPair},
		{body: "a=1&", wantErr: ErrEmptyPair},
		{body: "&a=1", wantErr: ErrEmptyPair},
		{body: "%zz=1", wantErr: ErrNameEscape},
		{body: "a.b=1", wantErr: ErrName},
		{body: "a[]=1", wantErr: ErrName},
		{body: "=1", wantErr: ErrName},
		{body: "a%20b=1", wantErr: ErrName},
		{body: "amount=1&AMOUNT=2", wantErr: ErrRepeated},
		{body: "a=1&a=1", wantErr: ErrRepeated},
		{body: strings.Repeat("a=1&", MaxFields) + "z=1", wantErr: ErrRepeated},
	} {
		got, err := Parse([]byte(tt.body))
		if tt.wantErr != nil {
			require.ErrorIs(t, err, tt.wantErr, tt.body)
			continue
		}
		require.NoError(t, err, tt.body)
		require.Equal(t, tt.want, got, tt.body)
	}
}

func TestTooManyFields(t *testing.T) {
	var b strings.Builder
	for i := range MaxFields {
		b.WriteString("f" + strings.Repeat("x", i%60) + string(rune('a'+i/60)) + "=1&")
	}
	body := strings.TrimSuffix(b.String(), "&")
	_, err := Parse([]byte(body))
	require.NoError(t, err, "MaxFields fields read")
	_, err = Parse([]byte(body + "&extra=1"))
	require.ErrorIs(t, err, ErrTooMany)
}

func TestValues(t *testing.T) {
	f, err := Parse([]byte("a=%41&b=%zz"))
	require.NoError(t, err, "values are read when asked for")
	v, ok, err := f.Get("a")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "A", v)
	_, ok, err = f.Get("b")
	require.True(t, ok)
	require.ErrorIs(t, err, ErrEscape)
	require.ErrorIs(t, f.Values(), ErrEscape)
	_, ok, err = f.Get("c")
	require.NoError(t, err)
	require.False(t, ok)
}

func TestWith(t *testing.T) {
	for _, tt := range []struct{ body, name, value, want string }{
		{"a=1&sig=old&b=2", "sig", "new", "a=1&sig=new&b=2"},
		{"a=1&sig&b=2", "sig", "new", "a=1&sig=new&b=2"},
		{"a=1&sig=", "sig", "x y|z", "a=1&sig=x+y%7Cz"},
		{"a=1", "sig", "v", "a=1&sig=v"},
		{"sig=1", "sig", "", "sig="},
	} {
		f, err := Parse([]byte(tt.body))
		require.NoError(t, err)
		require.Equal(t, tt.want, string(f.With([]byte(tt.body), tt.name, tt.value)), tt.body)
	}
}

func TestFingerprint(t *testing.T) {
	f, err := Parse([]byte("b=2&a=1&c=3"))
	require.NoError(t, err)
	g, err := Parse([]byte("a=1&c=9&b=2&d=4"))
	require.NoError(t, err)
	require.Equal(t, f.Fingerprint([]string{"a", "b"}), g.Fingerprint([]string{"a", "b"}), "order and other fields do not count")
	require.NotEqual(t, f.Fingerprint([]string{"a", "c"}), g.Fingerprint([]string{"a", "c"}))
	// Length prefixes: a=12,b=3 and a=1,b=23 hash apart.
	h, _ := Parse([]byte("a=12&b=3"))
	k, _ := Parse([]byte("a=1&b=23"))
	require.NotEqual(t, h.Fingerprint([]string{"a", "b"}), k.Fingerprint([]string{"a", "b"}))
}

// FuzzParse feeds bodies to the reader: it never panics, a form it reads
// gives each field once (whatever its case) within the body, and With
// setting a field to its own value gives a form that reads that value back.
func FuzzParse(f *testing.F) {
	f.Add([]byte("MERCHANTID=TEST01&MERCHANT_TRANID=OID00001&AMOUNT=192.00&TXN_STATUS=A&SIGNATURE=D8"))
	f.Add([]byte("a=&b&c=%41%2B+x"))
	f.Fuzz(func(t *testing.T, body []byte) {
		form, err := Parse(body)
		if err != nil || form.Values() != nil {
			return
		}
		for i, g := range form {
			for _, h := range form[i+1:] {
				if strings.EqualFold(g.Name, h.Name) {
					t.Fatalf("%s read twice from %q", g.Name, body)
				}
			}
			if g.Start > g.End || g.End > len(body) || string(body[g.Start:g.End]) != g.Raw {
				t.Fatalf("field %s at [%d, %d] of %d bytes", g.Name, g.Start, g.End, len(body))
			}
		}
		want, _ := form[0].Value()
		out := form.With(body, form[0].Name, want)
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("rewritten form %q does not read: %v", out, err)
		}
		if v, _, _ := again.Get(form[0].Name); v != want {
			t.Fatalf("%s is %q after rewriting, was %q", form[0].Name, v, want)
		}
	})
}
