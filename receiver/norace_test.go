//go:build !race

package receiver

// raceEnabled: see race_test.go.
const raceEnabled = false
