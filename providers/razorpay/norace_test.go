//go:build !race

package razorpay_test

// raceEnabled: see race_test.go.
const raceEnabled = false
