package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// newFlagSet returns a flag set for a subcommand whose errors and -h output
// go to stderr, headed by the command's usage line.
func newFlagSet(name, usageLine string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n", usageLine)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses args with fs and returns the positional arguments.
// Unlike fs.Parse it accepts flags after positional arguments too
// (`keys get KEY --json`, `replay fixtures/stripe --repeat 5`); "--" ends
// the flags.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// flagExit returns the exit status for a flag parsing error: 0 after -h
// (usage was printed on request), 2 otherwise (flag has printed the error
// and the usage).
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// parseFlagsOnly parses args with fs for a command that takes flags and no
// positional argument. A stray argument is refused rather than ignored (a
// mistyped flag would otherwise pass unnoticed), with hint, when not empty,
// appended to say where the command's input comes from. ok is false when
// the command must exit with code.
func parseFlagsOnly(fs *flag.FlagSet, args []string, stderr io.Writer, hint string) (code int, ok bool) {
	rest, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err), false
	}
	if len(rest) > 0 {
		if hint != "" {
			hint = " (" + hint + ")"
		}
		fmt.Fprintf(stderr, "%s: unexpected arguments %q%s\n", fs.Name(), rest, hint)
		return 2, false
	}
	return 0, true
}
