//go:build !race

package spec_test

// raceEnabled: see race_test.go.
const raceEnabled = false
