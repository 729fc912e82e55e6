package paypal_test

import (
	"bytes"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
)

// forgeCRC returns body with the 8 bytes at body[at:at+8] replaced so that
// its IEEE CRC-32 is want: the "CRC forcing" an attacker needs to reuse one
// genuine PayPal signature for a body of their own. CRC-32 is affine over
// GF(2) (crc(x^d) = crc(x)^crc(d)^crc(0...) for equal lengths), so the
// effect of flipping each free bit is a fixed 32-bit vector and the patch
// solves a linear system. Each patched byte is 0x60|b with b of 5 bits
// ('`', 'a'...'z', '{', '|', '}', '~', DEL), so the patch is plain text inside
// a JSON string: 40 unknowns for 32 equations.
func forgeCRC(t testing.TB, body []byte, at int, want uint32) []byte {
	t.Helper()
	const n = 8
	out := append([]byte(nil), body...)
	for i := range n {
		out[at+i] = 0x60
	}
	base := crc32.ChecksumIEEE(out)
	// cols[j] is the CRC change caused by flipping free bit j.
	var cols []uint32
	for i := range n {
		for b := range 5 {
			out[at+i] ^= 1 << b
			cols = append(cols, crc32.ChecksumIEEE(out)^base)
			out[at+i] ^= 1 << b
		}
	}
	// Gaussian elimination over GF(2): rows are the 32 CRC bits, each row a
	// mask of the free bits (40 fit in a uint64) plus its right-hand side.
	type row struct {
		mask uint64
		rhs  bool
	}
	target := base ^ want
	rows := make([]row, 32)
	for r := range 32 {
		for j, c := range cols {
			if c>>r&1 == 1 {
				rows[r].mask |= 1 << j
			}
		}
		rows[r].rhs = target>>r&1 == 1
	}
	pivots := make([]int, 0, 32)
	for col, r := 0, 0; col < len(cols) && r < 32; col++ {
		p := -1
		for i := r; i < 32; i++ {
			if rows[i].mask>>col&1 == 1 {
				p = i
				break
			}
		}
		if p < 0 {
			continue
		}
		rows[r], rows[p] = rows[p], rows[r]
		for i := range 32 {
			if i != r && rows[i].mask>>col&1 == 1 {
				rows[i].mask ^= rows[r].mask
				rows[i].rhs = rows[i].rhs != rows[r].rhs
			}
		}
		pivots = append(pivots, col)
		r++
	}
	require.Len(t, pivots, 32, "the free bits span every CRC-32")
	var x uint64 // free (non-pivot) bits stay 0
	for r, col := range pivots {
		if rows[r].rhs {
			x |= 1 << col
		}
	}
	for j := range cols {
		if x>>j&1 == 1 {
			out[at+j/5] ^= 1 << (j % 5)
		}
	}
	require.Equal(t, want, crc32.ChecksumIEEE(out))
	return out
}

// forgeEvent rewrites a genuine delivery's body into another event (old
// strings replaced by new ones, same length or not) and then forces its
// CRC-32 back to the genuine one through 8 bytes placed inside the JSON
// string value that follows marker.
func forgeEvent(t testing.TB, genuine []byte, marker string, replace ...string) []byte {
	t.Helper()
	forged := append([]byte(nil), genuine...)
	for i := 0; i < len(replace); i += 2 {
		require.True(t, bytes.Contains(forged, []byte(replace[i])), replace[i])
		forged = bytes.Replace(forged, []byte(replace[i]), []byte(replace[i+1]), 1)
	}
	at := bytes.Index(forged, []byte(marker))
	require.GreaterOrEqual(t, at, 0, marker)
	at += len(marker)
	// Room for the patch: 8 placeholder bytes at the start of the string.
	forged = append(forged[:at], append([]byte("########"), forged[at:]...)...)
	forged = forgeCRC(t, forged, at, crc32.ChecksumIEEE(genuine))
	require.NotEqual(t, genuine, forged)
	return forged
}

func TestForgeCRC(t *testing.T) {
	body := []byte(`{"id":"WH-1","summary":"xxxxxxxx payment"}`)
	for _, want := range []uint32{0, 1, 0xdeadbeef, 0xffffffff, crc32.ChecksumIEEE([]byte("other"))} {
		got := forgeCRC(t, body, 24, want)
		require.Equal(t, want, crc32.ChecksumIEEE(got))
		for _, c := range got[24:32] {
			require.True(t, c >= 0x60 && c <= 0x7f, "printable, no quote or backslash")
		}
	}
}
