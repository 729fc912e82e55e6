package providers

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEditDistance(t *testing.T) {
	require.Equal(t, 0, editDistance("abc", "abc"))
	require.Equal(t, 3, editDistance("", "abc"))
	require.Equal(t, 1, editDistance("kitten", "sitten"))
	require.Equal(t, 3, editDistance("kitten", "sitting"))
	require.Equal(t, "secrets", Nearest("secrts", []string{"tolerance", "secrets"}))
}
