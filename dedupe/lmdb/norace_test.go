//go:build !race

package lmdb

// raceEnabled: see race_test.go.
const raceEnabled = false
