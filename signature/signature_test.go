package signature_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/signature"
)

func TestHMACSHA256(t *testing.T) {
	// RFC 4231 section 4: HMAC-SHA-256 results.
	tests := []struct {
		name string
		key  []byte
		msg  []byte
		want string
	}{
		{
			name: "RFC 4231 test case 1",
			key:  bytes.Repeat([]byte{0x0b}, 20),
			msg:  []byte("Hi There"),
			want: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
		},
		{
			name: "RFC 4231 test case 2 (key shorter than the output)",
			key:  []byte("Jefe"),
			msg:  []byte("what do ya want for nothing?"),
			want: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
		},
		{
			name: "RFC 4231 test case 3",
			key:  bytes.Repeat([]byte{0xaa}, 20),
			msg:  bytes.Repeat([]byte{0xdd}, 50),
			want: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
		},
		{
			name: "RFC 4231 test case 6 (key larger than the block size)",
			key:  bytes.Repeat([]byte{0xaa}, 131),
			msg:  []byte("Test Using Larger Than Block-Size Key - Hash Key First"),
			want: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
		},
		{
			name: "Stripe vector (docs/providers.md)",
			key:  []byte("whsec_test_secret"),
			msg:  []byte(`1700000000.{"id":"evt_test_webhook","object":"event"}`),
			want: "d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, signature.HMACSHA256Hex(tt.key, tt.msg))
			want, err := hex.DecodeString(tt.want)
			require.NoError(t, err)
			require.Equal(t, want, signature.HMACSHA256(tt.key, tt.msg))

			// Split into parts at every position, the MAC is the same.
			for i := range len(tt.msg) + 1 {
				require.Equal(t, want, signature.HMACSHA256(tt.key, tt.msg[:i], tt.msg[i:]))
			}
		})
	}
}

func TestMatchHMACSHA256(t *testing.T) {
	old, cur := []byte("old secret"), []byte("new secret")
	prefix, body := []byte("1700000000."), []byte(`{"id":"evt_1"}`)
	byOld := signature.HMACSHA256(old, prefix, body)
	byCur := signature.HMACSHA256(cur, prefix, body)
	tampered := bytes.Clone(byCur)
	tampered[0] ^= 1
	tests := []struct {
		name string
		keys [][]byte
		sigs [][]byte
		want bool
	}{
		{"one key, its signature", [][]byte{cur}, [][]byte{byCur}, true},
		{"signature under the second key", [][]byte{cur, old}, [][]byte{byOld}, true},
		{"right signature after a wrong one", [][]byte{cur}, [][]byte{tampered, byCur}, true},
		{"signature under a key not configured", [][]byte{cur}, [][]byte{byOld}, false},
		{"one bit changed", [][]byte{cur, old}, [][]byte{tampered}, false},
		{"truncated", [][]byte{cur}, [][]byte{byCur[:31]}, false},
		{"no signatures", [][]byte{cur}, nil, false},
		{"no keys", nil, [][]byte{byCur}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, signature.MatchHMACSHA256(signature.NewHMACKeys(tc.keys), tc.sigs, prefix, body))
		})
	}
	// The parts are concatenated: splitting the message elsewhere matches.
	require.True(t, signature.MatchHMACSHA256(signature.NewHMACKeys([][]byte{cur}), [][]byte{byCur}, append(bytes.Clone(prefix), body...)))
}

func TestSHA512Hex(t *testing.T) {
	// FIPS 180-2 appendix C examples, plus the empty string.
	tests := []struct {
		in   string
		want string
	}{
		{"abc", "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"},
		{"", "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"},
		{
			"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
			"8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909",
		},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := signature.SHA512Hex(tt.in)
			require.Equal(t, tt.want, got)
			require.Equal(t, strings.ToLower(got), got)
		})
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b []byte
		want bool
	}{
		{"equal", []byte("abc"), []byte("abc"), true},
		{"both empty", []byte{}, nil, true},
		{"last byte differs", []byte("abc"), []byte("abd"), false},
		{"prefix", []byte("ab"), []byte("abc"), false},
		{"one empty", nil, []byte("a"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, signature.Equal(tt.a, tt.b))
			require.Equal(t, tt.want, signature.Equal(tt.b, tt.a))
		})
	}
}

func TestEqualString(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"equal", "xnd_callback_token", "xnd_callback_token", true},
		{"both empty", "", "", true},
		{"last byte differs", "token-a", "token-b", false},
		{"prefix", "token", "token-and-more", false},
		{"empty against token", "", "token", false},
		{"case differs", "Token", "token", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, signature.EqualString(tt.a, tt.b))
			require.Equal(t, tt.want, signature.EqualString(tt.b, tt.a))
		})
	}
}

// TestHMACKeyMatchesHMACSHA256: the pooled HMACKey gives the same MAC as
// HMACSHA256 for every RFC 4231 key length, call after call (a reused state
// carries nothing over), and from concurrent callers.
func TestHMACKeyMatchesHMACSHA256(t *testing.T) {
	keys := [][]byte{[]byte("Jefe"), bytes.Repeat([]byte{0x0b}, 20), bytes.Repeat([]byte{0xaa}, 131), nil}
	msgs := [][][]byte{{[]byte("Hi There")}, {[]byte("123."), []byte(`{"id":"evt_1"}`)}, {}, {bytes.Repeat([]byte{0xdd}, 5000)}}
	for _, key := range keys {
		k := signature.NewHMACKey(key)
		for range 3 {
			for _, msg := range msgs {
				sum := k.Sum(msg...)
				require.Equal(t, signature.HMACSHA256(key, msg...), sum[:])
			}
		}
		done := make(chan struct{})
		for g := range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := range 200 {
					msg := []byte(strings.Repeat("x", g*7+i))
					if sum := k.Sum(msg); !bytes.Equal(signature.HMACSHA256(key, msg), sum[:]) {
						t.Errorf("key %x, message %d: MACs differ", key, i)
						return
					}
				}
			}()
		}
		for range 4 {
			<-done
		}
	}
}

// TestHMACKeyAllocations: a Sum allocates nothing
// once the pool holds a state (hmac.New allocated about ten objects).
func TestHMACKeyAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop entries at random")
	}
	k := signature.NewHMACKey([]byte("whsec_test"))
	body := bytes.Repeat([]byte("a"), 2000)
	prefix := []byte("1700000000.")
	allocs := testing.AllocsPerRun(100, func() { k.Sum(prefix, body) })
	require.Zero(t, allocs)
}
