//go:build race

package main

// raceEnabled: the race detector's instrumentation slows the code several
// times over, so time targets are only checked without it.
const raceEnabled = true
