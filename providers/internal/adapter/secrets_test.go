package adapter_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/internal/adapter"
)

func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		list []string
		want [][]byte
		err  string
	}{
		{"one", []string{"whsec_a"}, [][]byte{[]byte("whsec_a")}, ""},
		{"rotation keeps order", []string{"new", "old"}, [][]byte{[]byte("new"), []byte("old")}, ""},
		{"inner space is kept", []string{"a b"}, [][]byte{[]byte("a b")}, ""},
		{"none", nil, nil, "stripe: no signing secret configured"},
		{"empty list", []string{}, nil, "stripe: no signing secret configured"},
		{"empty secret", []string{"a", ""}, nil, "stripe: signing secret 2 of 2 is empty"},
		{"trailing space", []string{"a ", "b"}, nil, "stripe: signing secret 1 of 2 has leading or trailing white space"},
		{"leading newline", []string{"a", "\nb"}, nil, "stripe: signing secret 2 of 2 has leading or trailing white space"},
		{"first flaw wins", []string{"", " b"}, nil, "stripe: signing secret 1 of 2 is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := adapter.Keys("stripe", "signing secret", tc.list)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				require.EqualError(t, adapter.Check("stripe", "signing secret", tc.list), tc.err)
				return
			}
			require.NoError(t, err)
			require.NoError(t, adapter.Check("stripe", "signing secret", tc.list))
			require.Equal(t, tc.want, keys)
		})
	}
}

func TestDecode(t *testing.T) {
	errBad := errors.New("not base64")
	decode := func(s string) ([]byte, error) {
		key, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(key) == 0 {
			return nil, errBad
		}
		return key, nil
	}
	for _, tc := range []struct {
		name string
		list []string
		want [][]byte
		err  string
		// decodeErr: the error wraps decode's own.
		decodeErr bool
	}{
		{"decoded", []string{"a2V5", "b3RoZXI="}, [][]byte{[]byte("key"), []byte("other")}, "", false},
		{"none", nil, nil, "standard: no secret configured", false},
		{"surrounding space", []string{"a2V5", "a2V5 "}, nil, "standard: secret 2 of 2 has leading or trailing white space", false},
		{"empty is decode's to refuse", []string{""}, nil, "standard: secret 1 of 1: not base64", true},
		{"undecodable", []string{"a2V5", "!"}, nil, "standard: secret 2 of 2: not base64", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := adapter.Decode("standard", "secret", tc.list, decode)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				if tc.decodeErr {
					require.ErrorIs(t, err, errBad)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, keys)
		})
	}
}
