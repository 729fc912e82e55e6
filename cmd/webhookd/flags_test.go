package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
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

// TestEveryCommandHelp: -h and --help print the command's usage and exit 0
// for every subcommand, flags or not.
func TestEveryCommandHelp(t *testing.T) {
	for _, c := range commands() {
		for _, h := range []string{"-h", "--help"} {
			t.Run(c.name+" "+h, func(t *testing.T) {
				clearEnv(t)
				var o, e bytes.Buffer
				require.Zero(t, run(context.Background(), []string{c.name, h}, &o, &e), "stderr: %s", e.String())
				want := "webhookd " + c.name
				if c.name == "help" {
					want = "Usage:"
				}
				require.Contains(t, strings.ToLower(o.String()+e.String()), strings.ToLower(want))
			})
		}
	}
}

// TestFlagsOnlyCommandsRefuseArguments: a command that takes no positional
// argument says so and exits 2 before it does anything.
func TestFlagsOnlyCommandsRefuseArguments(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--", "x"}, `webhookd serve: unexpected arguments ["x"] (configuration comes from WEBHOOKD_* variables; see webhookd help)`},
		{[]string{"sink", "x", "--status", "200"}, `webhookd sink: unexpected arguments ["x"]`},
		{[]string{"healthcheck", "x", "y"}, `webhookd healthcheck: unexpected arguments ["x" "y"]`},
		{[]string{"keys", "list", "stripe:evt_1"}, `webhookd keys list: unexpected arguments ["stripe:evt_1"]`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			clearEnv(t)
			var o, e bytes.Buffer
			require.Equal(t, 2, run(context.Background(), tc.args, &o, &e))
			require.Equal(t, tc.want+"\n", e.String())
			require.Empty(t, o.String())
		})
	}
}

// TestKeyArgumentsRefused: get, delete and redrive say what a KEY is, in
// the same words, before they open a store.
func TestKeyArgumentsRefused(t *testing.T) {
	const what = `"evt_1" is not a key: KEY is provider:event-key, the Idempotency-Key value (stripe:evt_123)`
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"keys", "get", "evt_1"}, "webhookd keys: " + what},
		{[]string{"keys", "delete", "evt_1"}, "webhookd keys: " + what},
		{[]string{"keys", "redrive", "stripe:evt_2", "evt_1"}, "webhookd keys redrive: " + what},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			clearEnv(t)
			var o, e bytes.Buffer
			require.Equal(t, 2, run(context.Background(), tc.args, &o, &e))
			require.Equal(t, tc.want+"\n", e.String())
		})
	}
}
