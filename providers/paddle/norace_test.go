//go:build !race

package paddle_test

// raceEnabled: see race_test.go.
const raceEnabled = false
