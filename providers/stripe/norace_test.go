//go:build !race

package stripe_test

// raceEnabled: see race_test.go.
const raceEnabled = false
