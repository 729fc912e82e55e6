//go:build !race

package signature_test

// raceEnabled: see race_test.go.
const raceEnabled = false
