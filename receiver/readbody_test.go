package receiver

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// TestReadBody: the body arrives whole whatever its size relative to the
// first buffer and the limit, whether its length is announced or not, and
// the limit holds either way.
func TestReadBody(t *testing.T) {
	const limit = 3*firstBodyBuffer + 7
	tests := []struct {
		name     string
		size     int
		announce int64 // -1: unknown (chunked)
		err      error
	}{
		{"empty", 0, 0, nil},
		{"one byte", 1, 1, nil},
		{"first buffer exactly", firstBodyBuffer, firstBodyBuffer, nil},
		{"one past the first buffer", firstBodyBuffer + 1, firstBodyBuffer + 1, nil},
		{"at the limit", limit, limit, nil},
		{"at the limit, unannounced", limit, -1, nil},
		{"small, unannounced", 10, -1, nil},
		{"over the limit, announced", limit + 1, limit + 1, ErrTooLarge},
		{"over the limit, unannounced", limit + 1, -1, ErrTooLarge},
		{"shorter than announced", 10, 20, providers.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := []byte(strings.Repeat("x", tt.size))
			r := httptest.NewRequest("POST", "/webhooks/stripe", io.MultiReader(bytes.NewReader(want)))
			r.ContentLength = tt.announce
			if tt.announce > int64(tt.size) {
				r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(want), errReader{io.ErrUnexpectedEOF}))
			}
			got, err := readBody(httptest.NewRecorder(), r, limit)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.LessOrEqual(t, cap(got), limit+1, "the buffer never outgrows the limit")
		})
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
