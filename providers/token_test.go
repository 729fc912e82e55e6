package providers_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

func TestIsToken(t *testing.T) {
	tests := []struct {
		s    string
		max  int
		want bool
	}{
		{"evt_1", 10, true},
		{"a:b/c.d-e_f~!", 20, true},
		{strings.Repeat("a", 10), 10, true},
		{strings.Repeat("a", 11), 10, false},
		{"", 10, false},
		{"a b", 10, false},
		{"a\tb", 10, false},
		{"a\r\nX-Injected: 1", 40, false},
		{"a\x7f", 10, false},
		{"é", 10, false},
		{"a\x00", 10, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, providers.IsToken(tt.s, tt.max), "%q", tt.s)
	}
}
