//go:build !race

package dispatch_test

// raceEnabled: see race_test.go.
const raceEnabled = false
