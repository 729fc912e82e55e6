package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseArgsAcceptsInterspersedFlags(t *testing.T) {
	tests := []struct {
		args    []string
		json    bool
		n       int
		wantPos []string
	}{
		{[]string{"get", "KEY"}, false, 0, []string{"get", "KEY"}},
		{[]string{"KEY", "--json"}, true, 0, []string{"KEY"}},
		{[]string{"--json", "a", "-n", "3", "b"}, true, 3, []string{"a", "b"}},
		{[]string{"a", "--", "--json", "-n"}, false, 0, []string{"a", "--json", "-n"}},
		{[]string{"--", "-dash-file.json"}, false, 0, []string{"-dash-file.json"}},
		{nil, false, 0, nil},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		j := fs.Bool("json", false, "")
		n := fs.Int("n", 0, "")
		pos, err := parseArgs(fs, tt.args)
		require.NoError(t, err, tt.args)
		require.Equal(t, tt.wantPos, pos, tt.args)
		require.Equal(t, tt.json, *j, tt.args)
		require.Equal(t, tt.n, *n, tt.args)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, err := parseArgs(fs, []string{"a", "--nope"})
	require.Error(t, err)
	require.Equal(t, 2, flagExit(err))
	_, err = parseArgs(fs, []string{"-h"})
	require.Equal(t, 0, flagExit(err))
}
