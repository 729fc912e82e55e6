package rawjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stringEndBytewise is stringEnd one byte at a time: the definition.
func stringEndBytewise(body []byte, i int) int {
	for ; i < len(body); i++ {
		switch body[i] {
		case '"':
			return i
		case '\\':
			i++
		}
	}
	return len(body)
}

// nextStructuralBytewise is nextStructural one byte at a time, without
// the stops at 'Y', '_', 'y' and DEL.
func nextStructuralBytewise(body []byte, i int) int {
	for ; i < len(body); i++ {
		switch body[i] {
		case '"', '{', '}', '[', ']':
			return i
		}
	}
	return len(body)
}

// FuzzScan holds the word-at-a-time scans to their byte-at-a-time
// definitions from every offset: stringEnd exactly, nextStructural but for
// stopping early at a byte that valid JSON has only in strings.
func FuzzScan(f *testing.F) {
	for _, s := range []string{``, `"`, `\"`, `\\"`, `abcdefg"`, `abcdefgh"`, `abcdefg\"x"`, `abcdefg\\"`,
		strings.Repeat(`a`, 63) + `\"` + strings.Repeat(`b`, 40) + `"`, strings.Repeat(`\\`, 40) + `"`,
		`{"a":[1,{"b":"}"}],"y":"\u007f"}`, "  {  \x7f y }\"", strings.Repeat(" ", 70) + "}", "  Y _ [ 1 ] ZZZ\\^`"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for i := 0; i <= len(body); i++ {
			if got, want := stringEnd(body, i), stringEndBytewise(body, i); got != want {
				t.Fatalf("stringEnd(%q, %d) = %d, want %d", body, i, got, want)
			}
			got, want := nextStructural(body, i), nextStructuralBytewise(body, i)
			if got != want && (got > want || !bytes.ContainsRune([]byte("Y_y\x7f"), rune(body[got]))) {
				t.Fatalf("nextStructural(%q, %d) = %d, want %d", body, i, got, want)
			}
		}
	})
}

// TestFoldHash: names a decoder takes for one have one key, whatever their
// length; ascii is false exactly for a name with an escape or a byte
// outside ASCII.
func TestFoldHash(t *testing.T) {
	alphabet := []byte("aAzZ09_-[{@`~ ")
	for _, long := range []string{"", "transaction_", "a_much_longer_prefix_than_a_word_"} {
		for _, a := range alphabet {
			for _, b := range alphabet {
				x, y := []byte(long+string([]byte{a, b})), []byte(strings.ToUpper(long)+string([]byte{b, a}))
				kx, okX := foldHash(x)
				ky, okY := foldHash(y)
				require.True(t, okX && okY)
				if compareRaw(x, y) == 0 {
					require.Equal(t, kx, ky, "%q %q", x, y)
				}
			}
		}
	}
	for _, tt := range []struct {
		raw   string
		ascii bool
	}{
		{"", true}, {"id", true}, {"transaction_status", true}, {"\x7f", true},
		{`a\"`, false}, {`transaction\u005fstatus`, false}, {"transaction_statu\\", false},
		{"é", false}, {"transaction_ſtatus", false}, {"a\xff", false}, {"abcdefgh\x80", false},
	} {
		_, ascii := foldHash([]byte(tt.raw))
		require.Equal(t, tt.ascii, ascii, "%q", tt.raw)
	}
}

// TestFoldHashTail: a name's last partial word is hashed the same whether
// it is read whole from the bytes after the name (masked off) or a byte at
// a time (no room after it), whatever those bytes are.
func TestFoldHashTail(t *testing.T) {
	for _, raw := range []string{"", "a", "id", "type", "created", "livemode", "livemodes", "api_version", "a_much_longer_name_x"} {
		alone := []byte(raw)[:len(raw):len(raw)] // no room: the byte loop
		k, ok := foldHash(alone)
		for _, after := range []string{`":`, `"  :  "\\\\\\\\`, "\"\xff\xff\xff\xff\xff\xff\xff\xff"} {
			body := []byte(raw + after)
			kb, okb := foldHash(body[:len(raw)])
			require.Equal(t, ok, okb, "%q before %q", raw, after)
			require.Equal(t, k, kb, "%q before %q", raw, after)
		}
	}
}

// TestHasVariantsCollisions: names whose keys collide are told apart by
// comparing them, in the table and past it (sorted), so a collision costs
// time, never a wrong answer.
func TestHasVariantsCollisions(t *testing.T) {
	for _, n := range []int{2, 3, 8, 64, 65, 200} {
		names := func(variant bool) []name {
			out := make([]name, n)
			for i := range out {
				out[i] = name{raw: []byte(fmt.Sprintf("member_%d", i)), key: 42}
			}
			if variant {
				out[n-1].raw = []byte("MEMBER_0")
			}
			return out
		}
		require.False(t, hasVariants(names(false), true), "%d distinct names", n)
		require.True(t, hasVariants(names(true), true), "%d names, a variant of the first last", n)
	}
}

// TestHasVariantsKeys: in a parsed body, real keys find the variant of any
// member of an object, at every size of object.
func TestHasVariantsKeys(t *testing.T) {
	for _, n := range []int{2, 3, 9, 63, 64, 65, 130} {
		for _, v := range []int{0, n / 2, n - 1} {
			var b strings.Builder
			b.WriteString(`{`)
			for i := range n {
				fmt.Fprintf(&b, `"member_%d":%d,`, i, i)
			}
			fmt.Fprintf(&b, `"MEMBER_%d":0}`, v)
			require.ErrorIs(t, checkNames([]byte(b.String())), ErrDuplicate, "%d members, variant of %d", n, v)
			require.NoError(t, checkNames(bytes.Replace([]byte(b.String()), []byte("MEMBER"), []byte("MEMBERS"), 1)))
		}
	}
}

// FuzzAppendCompact holds appendCompact to json.Compact on every valid JSON
// value, appended after bytes already in the buffer.
func FuzzAppendCompact(f *testing.F) {
	for _, s := range []string{`1`, `""`, `"a b"`, ` [ 1 , "x y" , { "a" : "\\" } ] `, "{\n  \"a\": [\n    1,\n    2\n  ],\n\t\"b\":\r\n null\n}",
		`{"abcdefg":"\"  \"","h":[ ]}`, `"\u0022 \\"`, "\"\xff \xfe\"", strings.Repeat(` [`, 20) + strings.Repeat(`] `, 20)} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, raw []byte, prefix int) {
		if !json.Valid(raw) {
			return
		}
		raw = bytes.TrimSpace(raw) // a member's value has no white space around it
		var want bytes.Buffer
		pre := bytes.Repeat([]byte{'p'}, prefix&15)
		want.Write(pre)
		if err := json.Compact(&want, raw); err != nil {
			t.Fatal(err)
		}
		if got := appendCompact(pre, raw); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("appendCompact(%q) = %q, json.Compact gives %q", raw, got, want.Bytes())
		}
	})
}

// TestProbeVariantsGivesUp: names whose keys collide, as names chosen by a
// sender can (the hash is no secret), make the table give up for the sort
// after a few probes per name, instead of comparing every pair.
func TestProbeVariantsGivesUp(t *testing.T) {
	colliding := make([]name, 40)
	distinct := make([]name, 40)
	for i := range colliding {
		raw := []byte(fmt.Sprintf("member_%02d", i))
		colliding[i] = name{raw: raw, key: 42}
		key, ascii := foldHash(raw)
		require.True(t, ascii)
		distinct[i] = name{raw: raw, key: key}
	}
	_, settled := probeVariants(colliding)
	require.False(t, settled, "colliding keys")
	variant, settled := probeVariants(distinct)
	require.True(t, settled, "the keys of distinct names")
	require.False(t, variant)
}
